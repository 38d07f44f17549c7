import { readFile } from 'node:fs/promises';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * Migration 0020 resolves the webhook_api_mismatch warnings an older daemon opened on normal
 * progress (a webhook of a status on the way, processed after the API had moved on, differing in
 * the status alone), which never resolved by themselves. Run here again on findings as such a
 * daemon left them.
 */
const database = await createMigratedDatabase('webhook_mismatch_backfill');
const db = database.db;

describe('migration 0020: webhook_api_mismatch on normal progress', () => {
  it('behavior: resolves the open ones that differ in a status on the way only; the rest stay as they were', async () => {
    const cases: Array<[string, unknown, boolean]> = [
      ['on_chain', { status: { webhook: 10, api: 20 } }, false],
      ['manual', { status: { webhook: 4, api: -3 } }, false],
      // A terminal status that disagrees is a real disagreement.
      ['underpaid', { status: { webhook: -3, api: 20 } }, true],
      ['confirmed', { status: { webhook: 20, api: 10 } }, true],
      // Another field differs too.
      ['amount', { status: { webhook: 10, api: 20 }, amount_coins: { webhook: '26', api: '25' } }, true],
      ['tx_hash', { tx_hash: { webhook: '0x1', api: '0x2' } }, true],
      // Not an object: left alone, and no error.
      ['odd', ['status'], true],
    ];
    for (const [id, differences] of cases)
      await db.execute(sql`
        insert into findings (kind, severity, ref_type, ref_id, details)
        values ('webhook_api_mismatch', 'warning', 'checkout_intent', ${id},
                ${JSON.stringify({ webhook_id: `wh-${id}`, differences })}::jsonb)`);
    // Another kind with the same details is not this migration's.
    await db.execute(sql`
      insert into findings (kind, severity, ref_type, ref_id, details)
      values ('stuck_intent', 'warning', 'checkout_intent', 'other',
              ${JSON.stringify({ differences: { status: { webhook: 10, api: 20 } } })}::jsonb)`);

    const text = await readFile(
      new URL('../../../migrations/0020_webhook_mismatch_progress.sql', import.meta.url),
      'utf8',
    );
    await db.execute(sql.raw(text));
    const { rows } = await db.execute<{ ref_id: string; open: boolean }>(sql`
      select ref_id, resolved_at is null as open from findings order by ref_id`);
    expect(Object.fromEntries(rows.map((r) => [r.ref_id, r.open]))).toEqual({
      ...Object.fromEntries(cases.map(([id, , open]) => [id, open])),
      other: true,
    });
  });
});
