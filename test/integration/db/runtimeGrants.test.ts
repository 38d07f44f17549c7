import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runMigrations } from '../../../src/db/migrate.ts';
import { RUNTIME_NO_ACCESS, RUNTIME_TABLE_GRANTS } from '../../../src/db/runtimeGrants.ts';
import { asRuntimeRole, createOwnedTestDatabase, createTestDatabase } from '../../helpers/testDatabase.ts';

/**
 * `runMigrations(url, { runtimeRole })` (what `stablebooks migrate` does with RUNTIME_ROLE):
 * every table the migrations create is classified in src/db/runtimeGrants.ts, the role gets
 * exactly the listed verbs, and roles grants cannot restrict are refused with one clear line.
 */
let ownerUrl: string;
let owner: pg.Client;
const role = inject('runtimeRole').name;

beforeAll(async () => {
  ownerUrl = await createTestDatabase('runtime_grants');
  await runMigrations(ownerUrl, { runtimeRole: role });
  owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
});
afterAll(() => owner?.end());

/** `schema.table` -> the role's privileges on it, sorted (empty when none). */
async function privileges(): Promise<Record<string, string[]>> {
  const { rows } = await owner.query<{ name: string; verbs: string[] }>(
    `select format('%s.%s', schemaname, tablename) as name,
            array(select v from unnest(array['SELECT','INSERT','UPDATE','DELETE','TRUNCATE','REFERENCES','TRIGGER']) v
                  where has_table_privilege($1, format('%I.%I', schemaname, tablename), v) order by v) as verbs
     from pg_tables where schemaname not in ('pg_catalog', 'information_schema') order by 1`,
    [role],
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.verbs]));
}

describe('runtime grants', () => {
  it('behavior: every table of the migrated schema is classified, and every classified table exists', async () => {
    const tables = Object.keys(await privileges());
    const classified = [...Object.keys(RUNTIME_TABLE_GRANTS).map((t) => `public.${t}`), ...RUNTIME_NO_ACCESS];
    expect(tables.filter((t) => !classified.includes(t))).toEqual([]);
    expect(classified.filter((t) => !tables.includes(t))).toEqual([]);
  });

  it('behavior: the role holds exactly the listed verbs, no TRUNCATE, and nothing on the migrations table', async () => {
    const expected = Object.fromEntries([
      ...Object.entries(RUNTIME_TABLE_GRANTS).map(([t, g]) => [`public.${t}`, [...g.verbs].sort()]),
      ...RUNTIME_NO_ACCESS.map((t) => [t, []]),
    ]);
    expect(await privileges()).toEqual(expected);
    expect((await privileges())['public.ledger_entries']).toEqual(['INSERT', 'SELECT']);
  });

  it('behavior: migrate again revokes what is not listed (a privilege granted by hand) and changes nothing else', async () => {
    const before = await privileges();
    await owner.query(`grant truncate, update on ledger_postings to ${owner.escapeIdentifier(role)}`);
    expect((await privileges())['public.ledger_postings']).toEqual([
      'INSERT',
      'SELECT',
      'TRUNCATE',
      'UPDATE',
    ]);
    const again = await runMigrations(ownerUrl, { runtimeRole: role });
    expect(again.after).toBe(again.before);
    expect(again.grants).toEqual({ role, granted: Object.keys(RUNTIME_TABLE_GRANTS).length, revoked: 1 });
    expect(await privileges()).toEqual(before);
  });

  it('behavior: the runtime role can insert into a serial table (sequence USAGE) but not read the migrations', async () => {
    const runtime = new pg.Client({ connectionString: asRuntimeRole(ownerUrl) });
    await runtime.connect();
    try {
      await runtime.query(`insert into webhook_nonces (nonce, expires_at) values ('n-1', now())`);
      await runtime.query(
        `insert into recon_runs (period_from, period_to, store_key, store_id, trigger, status, phase, started_at)
         values (now(), now(), 'all', null, 'manual', 'running', 'start', now())`,
      );
      await expect(runtime.query('select * from drizzle.__drizzle_migrations')).rejects.toThrow(
        /permission denied for (schema drizzle|table __drizzle_migrations)/,
      );
      await expect(runtime.query('create table public.mine (x int)')).rejects.toThrow(
        'permission denied for schema public',
      );
    } finally {
      await runtime.end();
    }
  });

  it('error: a role that does not exist, a superuser or the owner itself is refused in one line', async () => {
    await expect(runMigrations(ownerUrl, { runtimeRole: 'no_such_role_here' })).rejects.toThrow(
      /^RUNTIME_ROLE: role "no_such_role_here" does not exist; create it first .*then run migrate again$/,
    );
    await expect(runMigrations(ownerUrl, { runtimeRole: 'postgres' })).rejects.toThrow(
      'RUNTIME_ROLE: role "postgres" is a superuser, which no grant can restrict; give the daemon a role without SUPERUSER',
    );
    // A plain owner, as in production: naming itself (or a role inside it) as the runtime role.
    const ownedUrl = await createOwnedTestDatabase('runtime_grants_owned');
    const ownerRole = new URL(ownedUrl).username;
    await expect(runMigrations(ownedUrl, { runtimeRole: ownerRole })).rejects.toThrow(
      `RUNTIME_ROLE: role "${ownerRole}" is (or is a member of) "${ownerRole}", the role migrate runs as and the owner of the tables; give the daemon a role of its own`,
    );
  });

  it('behavior: a plain (not superuser) owner migrates and grants; the runtime role then cannot rewrite', async () => {
    const ownedUrl = await createOwnedTestDatabase('runtime_grants_plain_owner');
    const result = await runMigrations(ownedUrl, { runtimeRole: role });
    expect(result.grants?.granted).toBe(Object.keys(RUNTIME_TABLE_GRANTS).length);
    const runtime = new pg.Client({ connectionString: asRuntimeRole(ownedUrl) });
    await runtime.connect();
    try {
      await expect(runtime.query('alter table ledger_entries disable trigger user')).rejects.toThrow(
        'must be owner of table ledger_entries',
      );
    } finally {
      await runtime.end();
    }
  });
});
