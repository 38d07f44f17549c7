import { readFile } from 'node:fs/promises';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { readCursor } from '../../../src/chain/chainCursor.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * Migration 0011 adds chain_cursors.verified_block (the indexer re-reads ranges once they are
 * final) and counts the cursors of before as verified up to their recorded finality, so an upgrade
 * does not re-read history. The backfill is run here again on rows as an older daemon left them.
 */
const database = await createMigratedDatabase('cursor_verified_backfill');
const db = database.db;

async function backfillStatement(): Promise<string> {
  const text = await readFile(
    new URL('../../../migrations/0011_cursor_verified_block.sql', import.meta.url),
    'utf8',
  );
  const update = text.split('--> statement-breakpoint').find((s) => s.includes('UPDATE "chain_cursors"'));
  if (!update) throw new Error('0011 has no backfill statement');
  return update;
}

describe('migration 0011: chain_cursors.verified_block', () => {
  it('behavior: an old cursor is verified up to the lower of its block and its recorded finality', async () => {
    await db.execute(sql`
      insert into chain_cursors (chain_id, block_number, block_hash, head_block, finalized_block) values
        (1, 100, '0xa', 110, 90), (2, 50, '0xb', 120, 80), (3, 70, '0xc', 75, null)`);
    // Read before the backfill (a row written without the column) as after it.
    const before = await Promise.all([1, 2, 3].map(async (id) => (await readCursor(db, id))?.verifiedBlock));
    expect(before).toEqual([90n, 50n, 70n]);

    await db.execute(sql.raw(await backfillStatement()));
    const { rows } = await db.execute<{ chain_id: string; verified: string | null }>(sql`
      select chain_id::text, verified_block::text as verified from chain_cursors order by chain_id`);
    expect(rows).toEqual([
      { chain_id: '1', verified: '90' },
      { chain_id: '2', verified: '50' },
      { chain_id: '3', verified: '70' },
    ]);
  });
});
