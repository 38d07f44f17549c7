import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, inject } from 'vitest';

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
