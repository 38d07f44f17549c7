import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { runMigrations } from '../../../src/db/migrate.ts';
import { findBinary, postgresBinDirs } from '../../../src/devservices/findBinary.ts';
import { createTestDatabase } from '../../helpers/testDatabase.ts';

/**
 * docker-compose.yml's two roles, without Docker: its postgres-roles one shot (the same psql
 * command and script, with the compose's demo password) against a real PostgreSQL as the
 * superuser, twice; then migrate with the compose's RUNTIME_ROLE; then the daemon's compose
 * DATABASE_URL (pointed at this server) logs in and cannot rewrite the ledger.
 */
type Service = { command: string[]; environment: Record<string, string> };
const compose = parse(readFileSync(join(import.meta.dirname, '../../../docker-compose.yml'), 'utf8')) as {
  services: Record<string, Service>;
  configs: Record<string, { content: string }>;
};
/** Compose's `${VAR:-default}` with no variable set: the demo default. */
const demoValue = (v: string) => v.replace(/\$\{\w+:-([^}]*)\}/g, '$1');
const roles = compose.services['postgres-roles']!;
const daemonUrlInCompose = new URL(demoValue(compose.services.daemon!.environment.DATABASE_URL!));
const runtimeRole = compose.services.migrate!.environment.RUNTIME_ROLE!;

const admin = new URL(inject('adminDatabaseUrl'));
const ownerUrl = await createTestDatabase('compose_roles');
const psql = findBinary({
  name: 'psql',
  debianPackage: 'postgresql-client',
  brewFormula: 'postgresql@15',
  extraDirs: postgresBinDirs(),
});

/** The one shot's command, its script from the inline config, its environment aimed here. */
async function runRolesService(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-compose-roles-'));
  const script = join(dir, 'roles.sql');
  writeFileSync(script, compose.configs.postgres_roles!.content);
  const [binary, ...args] = roles.command;
  expect(binary).toBe('psql');
  const env = Object.fromEntries(Object.entries(roles.environment).map(([k, v]) => [k, demoValue(v)]));
  await promisify(execFile)(
    psql,
    args.map((a) => (a === '/run/stablebooks/roles.sql' ? script : a)),
    {
      env: {
        ...env,
        PGHOST: admin.hostname,
        PGPORT: admin.port,
        PGUSER: decodeURIComponent(admin.username),
        PGDATABASE: new URL(ownerUrl).pathname.slice(1),
        PGPASSWORD: decodeURIComponent(admin.password),
      },
    },
  );
}

let daemon: pg.Client | undefined;
afterAll(() => daemon?.end());

describe("docker-compose.yml's postgres-roles and migrate", () => {
  it('behavior: make a plain login role the daemon logs in as, granted by migrate; it cannot rewrite the ledger', async () => {
    await runRolesService();
    await runRolesService(); // every `docker compose up` runs it again
    const superuser = new pg.Client({ connectionString: ownerUrl });
    await superuser.connect();
    const { rows } = await superuser.query<{ login: boolean; superuser: boolean; createrole: boolean }>(
      'select rolcanlogin as login, rolsuper as superuser, rolcreaterole as createrole from pg_roles where rolname = $1',
      [daemonUrlInCompose.username],
    );
    await superuser.end();
    expect(rows).toEqual([{ login: true, superuser: false, createrole: false }]);

    const migrated = await runMigrations(ownerUrl, { runtimeRole });
    expect(migrated.grants?.role).toBe(daemonUrlInCompose.username);

    // The compose's daemon URL, user and password as they are, host and database this test's.
    const here = new URL(ownerUrl);
    here.username = daemonUrlInCompose.username;
    here.password = daemonUrlInCompose.password;
    daemon = new pg.Client({ connectionString: here.toString() });
    await daemon.connect();
    await daemon.query('select count(*) from ledger_entries');
    await expect(daemon.query('alter table ledger_postings disable trigger user')).rejects.toThrow(
      'must be owner of table ledger_postings',
    );
  });
});
