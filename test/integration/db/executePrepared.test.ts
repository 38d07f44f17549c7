import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from '../../../src/db/database.ts';
import { executePrepared } from '../../../src/db/executePrepared.ts';
import { createTestDatabase } from '../../helpers/testDatabase.ts';

describe('executePrepared', () => {
  let database: Database | undefined;
  afterAll(async () => {
    await database?.close();
  });

  it('behavior: a statement is prepared once per connection under a name derived from its text, in a transaction too', async () => {
    database = createDatabase(await createTestDatabase('execute_prepared'), { max: 1 });
    const { db } = database;
    const values = await db.transaction(async (tx) => {
      const out: string[] = [];
      for (const v of ['a', 'b', 'c'])
        out.push(
          (await executePrepared<{ v: string }>(tx, sql`select ${v}::text || '!' as v`)).rows[0]?.v ?? '',
        );
      // Another text gets another name: the two never collide.
      out.push(
        (await executePrepared<{ v: string }>(tx, sql`select ${'d'}::text || '?' as v`)).rows[0]?.v ?? '',
      );
      return out;
    });
    expect(values).toEqual(['a!', 'b!', 'c!', 'd?']);
    // The pool has one connection, so this sees the statements the transaction prepared.
    const prepared = await db.execute<{ name: string; statement: string }>(
      sql`select name, statement from pg_prepared_statements order by statement`,
    );
    expect(prepared.rows.map((r) => r.statement)).toEqual([
      "select $1::text || '!' as v",
      "select $1::text || '?' as v",
    ]);
    for (const row of prepared.rows) expect(row.name).toMatch(/^sb_[0-9a-f]{20}$/);
    expect(new Set(prepared.rows.map((r) => r.name)).size).toBe(2);
  });
});
