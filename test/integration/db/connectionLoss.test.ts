import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from '../../../src/db/database.ts';
import { createTestDatabase } from '../../helpers/testDatabase.ts';

/**
 * PostgreSQL going away (a restart, a failover, `pg_terminate_backend`) while a connection is
 * checked out of the pool: a transaction between statements, the indexer's advisory lock held
 * across RPC calls. pg's pool listens for errors on idle connections only, so the dropped
 * connection's 'error' event had no listener and crashed the daemon (found by the process outage
 * test: the worker's /readyz refused while PostgreSQL was down).
 */
describe('a pooled connection lost while checked out', () => {
  let database: Database | undefined;
  afterAll(async () => {
    await database?.close();
  });

  it('behavior: the process survives, the holder gets an error, and the pool serves the next query', async () => {
    database = createDatabase(await createTestDatabase('connection_loss'), { max: 2 });
    const { db, pool } = database;
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      const held = await pool.connect();
      const { rows } = await held.query<{ pid: number }>('select pg_backend_pid() as pid');
      // Not events.once: it would reject on the very 'error' this is about.
      const ended = new Promise((r) => held.once('end', r));
      await db.execute(sql`select pg_terminate_backend(${rows[0]?.pid})`);
      await ended;
      await new Promise((r) => setImmediate(r));
      expect(uncaught).toEqual([]);
      // Whoever holds it learns on its next statement, and gives it back as broken.
      await expect(held.query('select 1')).rejects.toThrow(/not queryable|terminat/i);
      held.release(true);
      expect((await db.execute<{ one: number }>(sql`select 1 as one`)).rows).toEqual([{ one: 1 }]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
