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
export function crashingDb(db: Db, statements: number, options: { prepared?: boolean } = {}): Db {
  const prepared = options.prepared === true;
  return gatedDb(db, crashGate(statements, { prepared }), { prepared });
}

/**
 * A gate that lets `statements` statements through, then refuses every later one: the process is
 * dead. `prepared`: executePrepared's statements count (else they pass uncounted).
 */
export function crashGate(statements: number, options: { prepared: boolean }): StatementGate {
  let left = statements;
  return (run, kind) => {
    if (kind === 'prepared' && !options.prepared) return run();
    if (left-- <= 0) return Promise.reject(new SimulatedCrash('simulated crash'));
    return run();
  };
}
