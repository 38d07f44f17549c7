import { readFile } from 'node:fs/promises';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * Migration 0012 adds payouts.claimed_reported_at (what the service said, kept apart from the
 * chain's claimed_at) and dates the links an older daemon left claimed by the service only (a 50108
 * "claimed" or a create replay set link_status, not claimed_at) by their last update, the moment
 * claim_unproven measured from before. The backfill is run here again on rows as such a daemon left them.
 */
const database = await createMigratedDatabase('claimed_reported_backfill');
const db = database.db;

async function backfillStatement(): Promise<string> {
  const text = await readFile(
    new URL('../../../migrations/0012_payout_claimed_reported.sql', import.meta.url),
    'utf8',
  );
  const update = text.split('--> statement-breakpoint').find((s) => s.includes('UPDATE "payouts"'));
  if (!update) throw new Error('0012 has no backfill statement');
  return update;
}

describe('migration 0012: payouts.claimed_reported_at', () => {
  it('behavior: a link the service called claimed and the chain has not is dated by its last update; others stay null', async () => {
    const at = '2026-11-01T10:00:00.000Z';
    const claimedAt = '2026-11-01T09:00:00.000Z';
    for (const [id, status, claimed] of [
      ['po_reported', 'claimed', null],
      ['po_proven', 'claimed', claimedAt],
      ['po_open', 'link_sent', null],
    ] as const) {
      await db.execute(sql`
        insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                             claim_link_id, link_status, claimed_at, updated_at)
        values (${id}, 'st_a', ${`ref-${id}`}, '5', 1, 1, '0xdac17f958d2ee523a2206206994597c13d831ec7', 'created',
                ${`cl-${id}`}, ${status}, ${claimed}::timestamptz, ${at}::timestamptz)`);
    }
    await db.execute(sql.raw(await backfillStatement()));
    const { rows } = await db.execute<{ id: string; reported: string | null }>(sql`
      select id, to_char(claimed_reported_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') as reported
      from payouts order by id`);
    expect(rows).toEqual([
      { id: 'po_open', reported: null },
      { id: 'po_proven', reported: null },
      { id: 'po_reported', reported: '2026-11-01T10:00:00' },
    ]);
  });
});
