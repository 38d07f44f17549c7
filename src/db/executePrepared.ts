import { createHash } from 'node:crypto';
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { QueryResult, QueryResultRow } from 'pg';
import type { DbExecutor } from './database.ts';

const dialect = new PgDialect();
const names = new Map<string, string>();

/**
 * Runs a statement of the hot paths (webhook processing, posting) as a named prepared statement:
 * each connection parses it once, and PostgreSQL plans it once per connection instead of once
 * per call (BASELINES: planning these statements cost as much as running them). The name is a
 * hash of the SQL text, so two statements can never share a name; use it only for statements
 * whose text does not vary with their values (every value a parameter, no `sql.raw` of data),
 * or each variant stays prepared on every connection.
 */
export async function executePrepared<T extends QueryResultRow>(
  db: DbExecutor,
  query: SQL,
): Promise<QueryResult<T>> {
  const built = dialect.sqlToQuery(query);
  let name = names.get(built.sql);
  if (name === undefined) {
    name = `sb_${createHash('sha1').update(built.sql).digest('hex').slice(0, 20)}`;
    names.set(built.sql, name);
  }
  const prepared = db._.session.prepareQuery(built, undefined, name, false);
  return (await prepared.execute()) as QueryResult<T>;
}
