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
 *
 * `prepared`: statements sent through executePrepared (src/db/executePrepared.ts: the handle's
 * `_.session.prepareQuery(...).execute()`, which passes by `execute`) count too. Without it they
 * are not counted and never crash, as before the option existed.
 */
export function crashingDb(db: Db, statements: number, options: { prepared?: boolean } = {}): Db {
  const budget = { left: statements, prepared: options.prepared === true };
  return wrap(db, budget);
}

interface Budget {
  left: number;
  prepared: boolean;
}

function spend<R>(budget: Budget, run: () => R): R | Promise<never> {
  if (budget.left-- <= 0) return Promise.reject(new SimulatedCrash('simulated crash'));
  return run();
}

function wrap<T extends object>(target: T, budget: Budget): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (prop === 'execute' && typeof value === 'function') {
        return (...args: unknown[]) =>
          spend(budget, () => (value as (...a: unknown[]) => unknown).apply(obj, args));
      }
      if (prop === '_' && budget.prepared && typeof value === 'object' && value !== null) {
        return internals(value, budget);
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

/** The handle's internals as executePrepared reaches them: `_.session.prepareQuery(...)`. */
function internals<T extends object>(target: T, budget: Budget): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (prop === 'session' && typeof value === 'object' && value !== null) {
        return new Proxy(value, {
          get(session, name, r) {
            const method = Reflect.get(session, name, r);
            if (name !== 'prepareQuery' || typeof method !== 'function') return method;
            return (...args: unknown[]) => {
              const prepared = (method as (...a: unknown[]) => object).apply(session, args);
              return new Proxy(prepared, {
                get(q, key, qr) {
                  const run = Reflect.get(q, key, qr);
                  if (key !== 'execute' || typeof run !== 'function') return run;
                  return (...a: unknown[]) =>
                    spend(budget, () => (run as (...x: unknown[]) => unknown).apply(q, a));
                },
              });
            };
          },
        });
      }
      return value;
    },
  });
}
