import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { RUNTIME_TABLE_GRANTS } from '../../src/db/runtimeGrants.ts';
import { runCli } from '../helpers/runCli.ts';
import { createTestDatabase } from '../helpers/testDatabase.ts';

describe('stablebooks CLI', () => {
  it('behavior: --help lists the commands and exits 0', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    for (const command of ['migrate', 'doctor', 'sandbox']) expect(run.stdout).toContain(command);
  });

  it('error: an unknown command exits non-zero with one line', async () => {
    const run = await runCli(['frobnicate']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/unknown command 'frobnicate'/);
  });

  it('error: migrate without DATABASE_URL names the variable', async () => {
    const run = await runCli(['migrate']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('DATABASE_URL: is required but not set');
    expect(run.stdout).toBe('');
  });

  it('error: migrate against an unreachable database is one line, no stack', async () => {
    const run = await runCli(['migrate'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^stablebooks: .*ECONNREFUSED/);
  });

  it('behavior: migrate is idempotent and speaks JSON', async () => {
    const url = await createTestDatabase('cli_migrate');
    const first = await runCli(['migrate', '--json'], { DATABASE_URL: url });
    const second = await runCli(['migrate', '--json'], { DATABASE_URL: url });
    expect(first.code).toBe(0);
    expect(second.code).toBe(0);
    const a = JSON.parse(first.stdout) as { applied: number; total: number };
    const b = JSON.parse(second.stdout) as { applied: number; total: number };
    expect(b).toEqual({ applied: 0, total: a.total, grants: null });
  });

  it("behavior: migrate with RUNTIME_ROLE grants that role the daemon's privileges, and says so", async () => {
    const url = await createTestDatabase('cli_migrate_role');
    const role = inject('runtimeRole').name;
    const run = await runCli(['migrate'], { DATABASE_URL: url, RUNTIME_ROLE: role });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const tables = Object.keys(RUNTIME_TABLE_GRANTS).length;
    expect(run.stdout.trim().split('\n')[1]).toBe(
      `granted role ${role} the daemon's privileges on ${tables} tables (none on 1 more)`,
    );
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ insert: boolean; update: boolean }>(
      `select has_table_privilege($1, 'ledger_entries', 'INSERT') as insert,
              has_table_privilege($1, 'ledger_entries', 'UPDATE') as update`,
      [role],
    );
    await client.end();
    expect(rows[0]).toEqual({ insert: true, update: false });
  });

  it('error: RUNTIME_ROLE naming a role that does not exist is one line saying what to do; nothing is migrated', async () => {
    const url = await createTestDatabase('cli_migrate_no_role');
    const run = await runCli(['migrate'], { DATABASE_URL: url, RUNTIME_ROLE: 'sb_missing_role' });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `stablebooks: RUNTIME_ROLE: role "sb_missing_role" does not exist; create it first (as a superuser or a role with CREATEROLE: create role sb_missing_role login password '...'), then run migrate again\n`,
    );
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ t: string | null }>(
      `select to_regclass('ledger_entries')::text as t`,
    );
    await client.end();
    expect(rows[0]?.t).toBeNull();
  });

  it('error: a RUNTIME_ROLE that is not a role name is a configuration error naming the variable', async () => {
    const run = await runCli(['migrate'], {
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      RUNTIME_ROLE: 'daemon; drop table x',
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^stablebooks: RUNTIME_ROLE: must be a PostgreSQL role name/);
    expect(run.stderr).not.toContain('drop table');
  });
});
