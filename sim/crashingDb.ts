import type { Db } from '../src/db/database.ts';

/** Thrown where the simulator cuts a job short: the process died between two of its statements. */
export class SimulatedCrash extends Error {
  override readonly name = 'SimulatedCrash';
}

/**
 * The database as a job sees it, dying after `statements` statements: the statement that would
 * be number `statements + 1` throws instead, inside or outside a transaction, so what the job had
 * not committed is rolled back, as when a worker is killed. The job then runs again on the real
 * database, as BullMQ's retry or a sweeper would.
 */
export function crashingDb(db: Db, statements: number): Db {
  const budget = { left: statements };
  return wrap(db, budget);
}

function wrap<T extends object>(target: T, budget: { left: number }): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (prop === 'execute' && typeof value === 'function') {
        return (...args: unknown[]) => {
          if (budget.left-- <= 0) return Promise.reject(new SimulatedCrash('simulated crash'));
          return (value as (...a: unknown[]) => unknown).apply(obj, args);
        };
      }
      if (prop === 'transaction' && typeof value === 'function') {
        return (fn: (tx: object) => Promise<unknown>, config?: unknown) =>
          (value as (f: (tx: object) => Promise<unknown>, c?: unknown) => Promise<unknown>).call(
            obj,
            (tx: object) => fn(wrap(tx, budget)),
            config,
          );
      }
      return value;
    },
  });
}
