import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { RunningDaemon } from '../../src/daemon/startDaemon.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { trackIntent } from '../../src/payments/createIntent.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * Several daemons on one PostgreSQL and one Redis (docs/architecture.md, "Processes and roles"): one intake (with the
 * scheduler) and two workers, all in-process, take the same burst of 50 payments. Half the
 * intents are also tracked, so both workers' pollers race the webhooks, and a fifth of the
 * webhooks arrive twice. Every payment is posted exactly once.
 */
const PAYMENTS = 50;
const pipeline = await startPipeline();
const intake = await pipeline.startDaemon(['intake', 'scheduler']);
const workers = [await pipeline.startDaemon(['worker']), await pipeline.startDaemon(['worker'])];
const client = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 3 } });
const secret = pipeline.config.stores[0]!.apiSecret;

async function jobsCompleted(daemon: RunningDaemon): Promise<number> {
  const metric = await daemon.metrics.jobsProcessed.get();
  return metric.values.filter((v) => v.labels.outcome === 'completed').reduce((n, v) => n + v.value, 0);
}

/** Runs `work` over `items`, at most `limit` at a time. */
async function inBatches<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += limit) await Promise.all(items.slice(i, i + limit).map(work));
}

describe('payments with two workers and one intake', () => {
  it(`behavior: a burst of ${PAYMENTS} payments is posted once each, no duplicate entry`, async () => {
    expect(intake.url).toBe(pipeline.daemonUrl);
    const ids: string[] = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: BigInt(1000 + i) });
      ids.push(created.allsvc_checkout_intent_id);
    }
    await inBatches(
      ids.filter((_, i) => i % 2 === 0),
      10,
      async (id) => {
        await trackIntent(pipeline.payments, 'st_a', id);
      },
    );
    const faults = await pipeline.sandbox.control('/_sandbox/faults', {
      webhooks: { duplicate: PAYMENTS / 5 },
    });
    expect(faults.status).toBe(200);
    await inBatches(ids, 10, async (id) => {
      const res = await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, {
        route: ids.indexOf(id) % 3 === 0 ? 'direct' : 'temp_wallet',
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    });

    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ n: number }>(sql`
        select count(distinct ref_id)::int as n from ledger_entries where ref_type = 'checkout_intent'`);
      return rows[0]?.n === PAYMENTS;
    }, 60_000);
    // Every stored webhook processed (duplicates included), so no late job can still post.
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ total: number; waiting: number }>(sql`
        select count(*)::int as total, count(*) filter (where status <> 'processed')::int as waiting
        from webhook_inbox`);
      return rows[0]?.total === PAYMENTS && rows[0].waiting === 0;
    }, 60_000);

    const { rows: perRef } = await pipeline.db.execute<{ ref_id: string; kind: string; n: number }>(sql`
      select ref_id, kind, count(*)::int as n from ledger_entries
      where ref_type = 'checkout_intent' group by ref_id, kind order by ref_id`);
    // Each intent has exactly one entry of each kind: its confirmation and, once the chain's
    // finalized block passes its transfer (anvil's lags 64 blocks), its proof.
    expect(perRef.filter((r) => r.n !== 1)).toEqual([]);
    expect(perRef.filter((r) => !['checkout.confirmed', 'chain.payment_proven'].includes(r.kind))).toEqual(
      [],
    );
    const confirmed = perRef.filter((r) => r.kind === 'checkout.confirmed');
    expect(confirmed).toHaveLength(PAYMENTS);
    expect(new Set(confirmed.map((r) => r.ref_id))).toEqual(new Set(ids));

    // Spot-check the amounts of one direct and one temporary-wallet payment (R = 10 + i/100 USDT).
    expect((await ledgerLinesOf(pipeline.db, ids[0]!)).filter((l) => l.startsWith('checkout.'))).toEqual([
      'checkout.confirmed: assets:in_transit 10000000',
      'checkout.confirmed: income:sales -10000000',
    ]);
    expect((await ledgerLinesOf(pipeline.db, ids[1]!)).filter((l) => l.startsWith('checkout.'))).toEqual([
      'checkout.confirmed: assets:in_transit 9909900',
      'checkout.confirmed: expense:service_fees 100100',
      'checkout.confirmed: income:sales -10010000',
    ]);

    // Both workers took part, the intake process ran no job.
    for (const worker of workers) expect(await jobsCompleted(worker)).toBeGreaterThan(0);
    expect(await jobsCompleted(intake)).toBe(0);
    // The sandbox sent every duplicate it was asked to.
    const log =
      await pipeline.sandbox.control<Array<{ attempts: Array<{ duplicate: boolean }> }>>(
        '/_sandbox/webhooks',
      );
    expect(log.body.flatMap((d) => d.attempts).filter((a) => a.duplicate)).toHaveLength(PAYMENTS / 5);
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  }, 120_000);

  it('security: the store api_secret never appears in the daemon logs', () => {
    expect(pipeline.logs.length).toBeGreaterThan(0);
    expect(pipeline.logs.filter((line) => line.includes(secret))).toEqual([]);
  });
});
