import type { Db } from '../src/db/database.ts';
import { gatedDb, type StatementGate } from './gatedDb.ts';

/** Thrown where the simulator cuts a job short: the process died between two of its statements. */
export class SimulatedCrash extends Error {
  override readonly name = 'SimulatedCrash';
}

/**
 * The database as a job sees it, dying after `statements` statements: the statement that would
 * be number `statements + 1` throws instead, inside or outside a transaction, so what the job had
 * not committed is rolled back, as when a worker is killed. The job then runs again on the real
 * database, as BullMQ's retry or a sweeper would.
 *
 * `prepared`: statements sent through executePrepared count too. Without it they are not counted
 * and never crash, as before the option existed.
 */
export function crashingDb(
  db: Db,
  statements: number,
  options: { prepared?: boolean; connLoss?: boolean } = {},
): Db {
  const prepared = options.prepared === true;
  return gatedDb(db, crashGate(statements, { prepared, connLoss: options.connLoss === true }), { prepared });
}

/**
 * A gate that lets `statements` statements through, then refuses every later one: the process is
 * dead. `prepared`: executePrepared's statements count (else they pass uncounted).
 *
 * `connLoss`: the process lives and PostgreSQL drops the connection instead (a restart, a
 * failover): the next `execute` from there on finds its connection terminated and fails with
 * PostgreSQL's own error; every later statement runs, on a connection the pool makes anew.
 */
export function crashGate(
  statements: number,
  options: { prepared: boolean; connLoss?: boolean },
): StatementGate {
  let left = statements;
  let lost = false;
  return (run, kind, loseConnection) => {
    if (kind === 'prepared' && !options.prepared) return run();
    if (options.connLoss) {
      if (lost || left-- > 0 || !loseConnection) return run();
      lost = true;
      return loseConnection().then(run);
    }
    if (left-- <= 0) return Promise.reject(new SimulatedCrash('simulated crash'));
    return run();
  };
}

/** PostgreSQL's error of a connection it terminated (57P01), or pg's when the socket closed. */
export function isConnectionLoss(err: unknown): boolean {
  for (
    let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, i = 0;
    e && i < 5;
    i++
  ) {
    if (e.code === '57P01') return true;
    if (typeof e.message === 'string' && /Connection terminated|not queryable/.test(e.message)) return true;
    e = e.cause as typeof e;
  }
  return false;
}
