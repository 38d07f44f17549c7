import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import pg from 'pg';

/** The Drizzle handle every module receives; a transaction (`db.transaction(tx => ...)`) has the same shape. */
export type Db = NodePgDatabase<Record<string, never>>;
/** A handle or an open transaction: whatever can run SQL. Domain writes take this so callers choose the transaction. */
export type DbExecutor = Pick<Db, 'execute' | '_'>;

export interface Database {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

// numeric and bigint columns come back as strings (pg's default); we convert to bigint ourselves,
// so no money value ever passes through a JavaScript number.
export function createDatabase(
  url: string,
  options: {
    max?: number;
    applicationName?: string;
    /** How long a new connection may take (PG_CONNECT_TIMEOUT_MS); without it pg waits for ever. */
    connectionTimeoutMs?: number;
    /** PostgreSQL cancels any statement running longer (PG_STATEMENT_TIMEOUT_MS). */
    statementTimeoutMs?: number;
  } = {},
): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'stablebooks',
    ...(options.connectionTimeoutMs === undefined
      ? {}
      : { connectionTimeoutMillis: options.connectionTimeoutMs }),
    ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
  });
  // A lost connection (server restart, failover, pg_terminate_backend) must not crash the process.
  // The pool listens on idle connections only (then 'error' here); a checked-out one emits its
  // 'error' with no listener, so each connection gets its own. Its holder still learns through the
  // statement that fails, and gives it back as broken; the next query reconnects.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = drizzle(pool) as Db;
  return { db, pool, close: () => pool.end() };
}
