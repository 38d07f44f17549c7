import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, inject } from 'vitest';
import { createDatabase, type Database } from '../../src/db/database.ts';
import { runMigrations } from '../../src/db/migrate.ts';

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

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A database of the calling file's own with every migration applied, and a pool closed after the file. */
export async function createMigratedDatabase(
  label = 'test',
  options: { max?: number } = {},
): Promise<Database & { url: string }> {
  const url = await createTestDatabase(label);
  await runMigrations(url);
  const database = createDatabase(url, { max: options.max ?? 10 });
  afterAll(() => database.close());
  return { ...database, url };
}
