import type pg from 'pg';

/**
 * One indexer pass per chain at a time, across every process: a session advisory lock on a
 * dedicated pooled connection, held for the pass. `pg_try_advisory_lock(class, chain)` with this
 * class constant; the migrator's single-key lock cannot collide with the two-key form.
 */
export const INDEXER_LOCK_CLASS = 0x5b_1d_c4;

export interface IndexerLock {
  release(): Promise<void>;
}

/** The lock, or null when another pass of this chain holds it. */
export async function tryIndexerLock(pool: pg.Pool, chainId: number): Promise<IndexerLock | null> {
  const client = await pool.connect();
  const key = toInt32(chainId);
  let acquired = false;
  try {
    const { rows } = await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1, $2) as ok', [
      INDEXER_LOCK_CLASS,
      key,
    ]);
    acquired = rows[0]?.ok === true;
  } catch (err) {
    client.release(err instanceof Error ? err : true);
    throw err;
  }
  if (!acquired) {
    client.release();
    return null;
  }
  return {
    async release() {
      try {
        await client.query('select pg_advisory_unlock($1, $2)', [INDEXER_LOCK_CLASS, key]);
        client.release();
      } catch (err) {
        // The session is in doubt: destroy the connection, which drops its locks with it.
        client.release(err instanceof Error ? err : true);
      }
    },
  };
}

/** Chain ids above 2^31 - 1 exist; the lock key is int4, so fold them (a collision only shares a lock). */
function toInt32(chainId: number): number {
  return chainId | 0;
}
