import { sql } from 'drizzle-orm';
import type { Db } from '../src/db/database.ts';

/**
 * Runs one statement when the gate lets it: the gate may wait (the interleaver's turn), refuse
 * (a crash), or run it at once.
 */
export type StatementGate = <R>(
  run: () => R,
  kind: StatementKind,
  /**
   * Has PostgreSQL terminate the connection this statement would run on (a transaction's own, or
   * the pool's next): the statement fails with PostgreSQL's error. Only for `execute`.
   */
  loseConnection?: () => Promise<unknown>,
) => R | Promise<R>;

/** How a statement was sent: `execute`, or executePrepared's prepared statement. */
export type StatementKind = 'execute' | 'prepared';

/**
 * The database as a job sees it, with every statement passing `gate` first: statements sent by
 * `execute` (on the handle or a transaction's) and, with `prepared`, those sent through
 * executePrepared (src/db/executePrepared.ts: `_.session.prepareQuery(...).execute()`). BEGIN and
 * COMMIT are the transaction's own and do not pass: a statement boundary is between two of the
 * job's statements.
 */
export function gatedDb(db: Db, gate: StatementGate, options: GateOptions): Db {
  return wrap(db, gate, options);
}

export interface GateOptions {
  /** executePrepared's statements pass the gate too. */
  prepared: boolean;
  /** Called once a transaction has committed or rolled back, before its caller goes on. */
  onTransactionEnd?: () => void;
}

function wrap<T extends object>(target: T, gate: StatementGate, options: GateOptions): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (prop === 'execute' && typeof value === 'function') {
        const execute = value as (...a: unknown[]) => unknown;
        return (...args: unknown[]) =>
          gate(
            () => execute.apply(obj, args),
            'execute',
            async () => execute.apply(obj, [sql`select pg_terminate_backend(pg_backend_pid())`]),
          );
      }
      if (prop === '_' && options.prepared && typeof value === 'object' && value !== null) {
        return internals(value, gate);
      }
      if (prop === 'transaction' && typeof value === 'function') {
        return (fn: (tx: object) => Promise<unknown>, config?: unknown) =>
          (value as (f: (tx: object) => Promise<unknown>, c?: unknown) => Promise<unknown>)
            .call(obj, (tx: object) => fn(wrap(tx, gate, options)), config)
            .finally(() => options.onTransactionEnd?.());
      }
      return value;
    },
  });
}

/** The handle's internals as executePrepared reaches them: `_.session.prepareQuery(...)`. */
function internals<T extends object>(target: T, gate: StatementGate): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (prop === 'session' && typeof value === 'object' && value !== null) {
        return new Proxy(value, {
          get(session, name, r) {
            const method = Reflect.get(session, name, r);
            if (name !== 'prepareQuery' || typeof method !== 'function') return method;
            return (...args: unknown[]) => {
              const query = (method as (...a: unknown[]) => object).apply(session, args);
              return new Proxy(query, {
                get(q, key, qr) {
                  const run = Reflect.get(q, key, qr);
                  if (key !== 'execute' || typeof run !== 'function') return run;
                  return (...a: unknown[]) =>
                    gate(() => (run as (...x: unknown[]) => unknown).apply(q, a), 'prepared');
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
