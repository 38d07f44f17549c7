import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import type pg from 'pg';
import type { Db } from '../db/database.ts';
import type { Period } from './period.ts';

/**
 * Reconciliation runs take turns, across every process (two schedulers, or the daily job and
 * `stablebooks report` by hand):
 *
 * - run lock: one run per (period, store) at a time, held for the whole run. A second run of the
 *   same period and store waits for it, then runs the period again itself (the run is idempotent:
 *   same row, same files, findings and proofs as of its own start). Without it both runs would
 *   write the one recon_runs row, and the one that broke would mark the other's finished run
 *   `failed`.
 * - findings lock: one findings transaction at a time, whatever the period or store. Findings are
 *   "as of now", not per period: two runs' repeatable-read transactions writing the same findings
 *   would fail one of them with a serialization error. It is taken before that transaction
 *   begins, so its snapshot sees the other run's findings.
 *
 * Both are session advisory locks on one connection of the run's own, taken from the pool behind
 * `db`, which also writes the run's row (start, phase, end): the run needs this connection and one
 * for its transactions, so a pool of two (the CLI's) is enough. Losing the connection drops the
 * locks with it; the run's row writes then fail, and the run fails without touching a newer run's
 * row (see runReconciliation.ts).
 */
/**
 * The locks' first keys (pg_locks.classid), beside the indexer's; the run lock's second key is
 * hashtext of the period and store key (a collision only makes two runs take turns).
 */
export const RECON_RUN_LOCK_CLASS = 0x5b_1d_c5;
export const RECON_FINDINGS_LOCK_CLASS = 0x5b_1d_c6;

export interface ReconRunLock {
  /** The lock's own connection, autocommit: writes here are seen at once (the run's row). */
  db: Db;
  /** Runs `work` holding the findings lock (waiting for it first). */
  withFindingsLock<T>(work: () => Promise<T>): Promise<T>;
  release(): Promise<void>;
}

/**
 * The run lock of this period and store key, waiting while another run holds it; `onWait` is
 * called once, before waiting, when it is held.
 */
export async function acquireRunLock(
  db: Db,
  period: Period,
  storeKey: string,
  onWait: () => Promise<void>,
): Promise<ReconRunLock> {
  const pool = poolOf(db);
  const client = await pool.connect();
  const lockDb = drizzle(client) as unknown as Db;
  const key = `${period.from.toISOString()} ${period.to.toISOString()} ${storeKey}`;
  const locked = sql`${RECON_RUN_LOCK_CLASS}::int, hashtext(${key})`;
  try {
    const { rows } = await lockDb.execute<{ ok: boolean }>(sql`select pg_try_advisory_lock(${locked}) as ok`);
    if (rows[0]?.ok !== true) {
      await onWait();
      await lockDb.execute(sql`select pg_advisory_lock(${locked})`);
    }
  } catch (err) {
    client.release(err instanceof Error ? err : true);
    throw err;
  }
  const findings = sql`${RECON_FINDINGS_LOCK_CLASS}::int, 0`;
  let inDoubt = false;
  return {
    db: lockDb,
    async withFindingsLock(work) {
      await lockDb.execute(sql`select pg_advisory_lock(${findings})`);
      try {
        return await work();
      } finally {
        await lockDb.execute(sql`select pg_advisory_unlock(${findings})`).catch(() => {
          inDoubt = true;
        });
      }
    },
    async release() {
      try {
        if (inDoubt) throw new Error('recon: the findings lock could not be released');
        await lockDb.execute(sql`select pg_advisory_unlock_all()`);
        client.release();
      } catch (err) {
        // The session is in doubt: destroy the connection, which drops its locks with it.
        client.release(err instanceof Error ? err : true);
      }
    },
  };
}

/** The pool drizzle's node-postgres driver keeps as `$client`. */
function poolOf(db: Db): pg.Pool {
  const pool = (db as unknown as { $client?: pg.Pool }).$client;
  if (!pool || typeof pool.connect !== 'function')
    throw new Error('recon: the database handle has no pool; pass the one createDatabase returns');
  return pool;
}
