import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, inject } from 'vitest';
import { createDatabase, type Database } from '../../src/db/database.ts';
import { runMigrations } from '../../src/db/migrate.ts';
import { ensureLoginRole, urlAsRole } from '../../src/devservices/loginRole.ts';

/**
 * Gives the calling test file a database of its own, so files run in parallel without sharing
 * state. It is dropped after the file's tests; when KEEP_TEST_DB is set it is kept for inspection.
 */
export async function createTestDatabase(label = 'test'): Promise<string> {
  const admin = inject('adminDatabaseUrl');
  const name = `sb_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  await withClient(admin, (c) => c.query(`create database "${name}"`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  afterAll(async () => {
    if (process.env.KEEP_TEST_DB) return;
    await withClient(admin, (c) => c.query(`drop database if exists "${name}" with (force)`));
  });
  return url.toString();
}

/**
 * A database of the calling file's own, owned by a login role that is not a superuser (as the
 * README's production setup has it), and that role's URL. The role is cluster-wide and shared:
 * made idempotently, a concurrent file's `create role` being the same role.
 */
export async function createOwnedTestDatabase(label = 'test'): Promise<string> {
  const admin = inject('adminDatabaseUrl');
  const role = { name: 'stablebooks_test_owner', password: 'stablebooks-test-owner' };
  await ensureLoginRole(admin, role);
  const url = await createTestDatabase(label);
  const name = new URL(url).pathname.slice(1);
  await withClient(admin, (c) => c.query(`alter database "${name}" owner to ${role.name}`));
  return urlAsRole(url, role);
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The same database as `url`, logged in as the daemon's role (RUNTIME_ROLE) instead. */
export function asRuntimeRole(url: string): string {
  return urlAsRole(url, inject('runtimeRole'));
}

export interface MigratedDatabase extends Database {
  /** The daemon's URL: the runtime role, with the grants `stablebooks migrate` gives it. */
  url: string;
  /** The owner's (the migrator's) URL and handle, for fixtures the daemon may not do (tampering with the ledger). */
  ownerUrl: string;
  ownerDb: Database['db'];
}

/**
 * A database of the calling file's own with every migration applied as the owner, and the
 * runtime role granted as `stablebooks migrate` grants RUNTIME_ROLE: `db`, `pool` and `url` are
 * that role's, so the code under test runs with the daemon's privileges (a missing grant fails
 * the test). Pools closed after the file.
 */
export async function createMigratedDatabase(
  label = 'test',
  options: { max?: number } = {},
): Promise<MigratedDatabase> {
  const ownerUrl = await createTestDatabase(label);
  await runMigrations(ownerUrl, { runtimeRole: inject('runtimeRole').name });
  const url = asRuntimeRole(ownerUrl);
  const database = createDatabase(url, { max: options.max ?? 10 });
  const owner = createDatabase(ownerUrl, { max: 2 });
  afterAll(() => Promise.all([database.close(), owner.close()]));
  return { ...database, url, ownerUrl, ownerDb: owner.db };
}
