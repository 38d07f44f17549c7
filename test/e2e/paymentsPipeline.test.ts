import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { trialBalance } from '../../src/ledger/balances.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';

const pipeline = await startPipeline();
await pipeline.startDaemon();
const client = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 3 } });

async function paidIntent(amountCents: bigint, pay: Record<string, unknown> = {}): Promise<string> {
  const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: amountCents });
  const id = created.allsvc_checkout_intent_id;
  const res = await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, pay);
  expect(res.status).toBe(200);
  return id;
}

async function postedLines(id: string, count = 1): Promise<string[]> {
  return pipeline.waitFor(async () => {
    const lines = await ledgerLinesOf(pipeline.db, id);
    const entries = new Set(lines.map((l) => l.split(':')[0]));
    return entries.size >= count ? lines : undefined;
  });
}

describe('payments pipeline: webhook to ledger', () => {
  it('behavior: an exact payment through the temporary wallet posts rule 1 once', async () => {
    const id = await paidIntent(2500n);
    expect(await postedLines(id)).toEqual([
      'checkout.confirmed: assets:in_transit 24750000',
      'checkout.confirmed: expense:service_fees 250000',
      'checkout.confirmed: income:sales -25000000',
    ]);
    const inbox = await pipeline.db.execute<{ status: string }>(sql`select status from webhook_inbox`);
    expect(inbox.rows.map((r) => r.status)).toEqual(['processed']);
  });

  it('behavior: an overpaid direct payment posts the overpayment line of docs/accounting.md', async () => {
    const over = await paidIntent(1000n, { amount: '12', route: 'direct' });
    expect(await postedLines(over)).toEqual([
      'checkout.confirmed: assets:in_transit 12000000',
      'checkout.confirmed: income:sales -10000000',
      'checkout.confirmed: liability:customer_overpayments -2000000',
    ]);
    for (const line of await trialBalance(pipeline.db)) expect(line.net).toBe(0n);
  });

  it('behavior: the scheduler keeps the ledger balance checkpoints advancing', async () => {
    const rows = await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ n: number }>(
        sql`select count(*)::int as n from ledger_balance_checkpoints`,
      );
      return (rows[0]?.n ?? 0) > 0 ? rows[0]!.n : undefined;
    }, 30_000);
    expect(rows).toBeGreaterThan(0);
  });
});
