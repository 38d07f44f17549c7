import { readFile } from 'node:fs/promises';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * Migration 0007 adds webhook_inbox.actual_paid_amount (reconciliation's matching reads it instead
 * of parsing every body) and fills it for the rows processed before it existed. The backfill is
 * run here again on rows written as an older daemon left them (column empty).
 */
const database = await createMigratedDatabase('webhook_paid_backfill');
const db = database.db;

async function backfillStatement(): Promise<string> {
  const text = await readFile(
    new URL('../../../migrations/0007_webhook_paid_amount.sql', import.meta.url),
    'utf8',
  );
  const update = text.split('--> statement-breakpoint').find((s) => s.includes('UPDATE "webhook_inbox"'));
  if (!update) throw new Error('0007 has no backfill statement');
  return update;
}

async function insert(id: string, endpoint: string, status: string, body: unknown): Promise<void> {
  await db.execute(sql`
    insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body, ref_id)
    values (${id}, 'st_a', ${endpoint}, ${status}, '{}'::jsonb, ${Buffer.from(JSON.stringify(body))}, ${id})`);
}

describe('migration 0007: webhook_inbox.actual_paid_amount', () => {
  it('behavior: backfills processed checkout webhooks exactly as their bodies say, and only those', async () => {
    await insert('wh_paid', 'checkout', 'processed', {
      all_svc_checkout_intent_id: 'ci_1',
      actual_paid_amount: '12.50',
    });
    await insert('wh_null', 'checkout', 'processed', {
      all_svc_checkout_intent_id: 'ci_2',
      actual_paid_amount: null,
    });
    await insert('wh_waiting', 'checkout', 'received', {
      all_svc_checkout_intent_id: 'ci_3',
      actual_paid_amount: '3',
    });
    await insert('wh_link', 'claim-links', 'processed', { event: 'cancelled', actual_paid_amount: '4' });

    await db.execute(sql.raw(await backfillStatement()));
    const { rows } = await db.execute<{ webhook_id: string; paid: string | null }>(sql`
      select webhook_id, actual_paid_amount::text as paid from webhook_inbox order by webhook_id`);
    expect(rows).toEqual([
      { webhook_id: 'wh_link', paid: null },
      { webhook_id: 'wh_null', paid: null },
      // The scale is kept: matching reports the webhook's amount as the service wrote it.
      { webhook_id: 'wh_paid', paid: '12.50' },
      { webhook_id: 'wh_waiting', paid: null },
    ]);
  });

  it('behavior: matching finds the column through its covering index', async () => {
    const { rows } = await db.execute<{ indexdef: string }>(sql`
      select indexdef from pg_indexes where indexname = 'webhook_inbox_checkout_paid_idx'`);
    expect(rows[0]?.indexdef).toMatch(/\(ref_id, actual_paid_amount\) WHERE/);
  });
});
