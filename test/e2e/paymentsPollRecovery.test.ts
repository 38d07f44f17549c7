import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { DomainContext } from '../../src/context/domainContext.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { createIntent } from '../../src/payments/createIntent.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * The sweepers that restart lost work. A poll job that fails for good (an error no retry can fix)
 * breaks the intent's chain of polls; the poll sweeper must start it again, or a payment whose
 * webhook is lost is never posted. A stored webhook whose job finished without processing it must
 * get a new job from the inbox sweeper.
 */
const pipeline = await startPipeline();
const daemon = await pipeline.startDaemon();

async function pollErrors(): Promise<number> {
  const metric = await daemon.metrics.polls.get();
  return metric.values.filter((v) => v.labels.outcome === 'error').reduce((n, v) => n + v.value, 0);
}

async function pollCount(id: string): Promise<number> {
  const { rows } = await pipeline.db.execute<{ poll_count: number }>(
    sql`select poll_count from checkout_intents where id = ${id}`,
  );
  return rows[0]?.poll_count ?? 0;
}

/** Rule 1 of 25 USDT paid exactly. */
const EXACT_LINES = [
  'checkout.confirmed: assets:in_transit 24750000',
  'checkout.confirmed: expense:service_fees 250000',
  'checkout.confirmed: income:sales -25000000',
];

/** The intent's ledger lines once any are posted (polling can take the sweeper's interval). */
function postedLines(id: string): Promise<string[]> {
  return pipeline.waitFor(async () => {
    const found = await ledgerLinesOf(pipeline.db, id);
    return found.length > 0 ? found : undefined;
  }, 45_000);
}

describe('payments poll recovery', () => {
  it('behavior: after a poll fails for good, the sweeper resumes polling and the payment is posted', async () => {
    const { created } = await createIntent(pipeline.payments, 'st_a', {
      stable_coin: 1,
      amount_cents: 2500n,
    });
    const id = created.allsvc_checkout_intent_id;
    await pipeline.waitFor(async () => (await pollCount(id)) > 0);

    // 10001 is not retryable: the poll job fails at once and the chain of polls breaks.
    const errorsBefore = await pollErrors();
    await pipeline.sandbox.control('/_sandbox/faults', { error_next: { code: 10001, count: 1 } });
    await pipeline.waitFor(async () => (await pollErrors()) > errorsBefore);
    const stalledAt = await pollCount(id);

    // Only polling can learn of this payment: its webhook is dropped.
    await pipeline.sandbox.control('/_sandbox/faults', { webhooks: { drop_next: 1 } });
    expect((await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, {})).status).toBe(200);
    // The sweeper treats a chain as broken after 15 min x POLL_INTERVAL_SCALE (18 s here).
    expect(await postedLines(id)).toEqual(EXACT_LINES);
    expect(await pollCount(id)).toBeGreaterThan(stalledAt);
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  }, 60_000);

  it('behavior: an intent whose first read fails after the create is still tracked and polled', async () => {
    // The service created it; the read that follows fails (a network error, a 5xx burst, a crash).
    const failingRead: DomainContext = {
      ...pipeline.payments,
      client: (storeId) => {
        const real = pipeline.payments.client(storeId);
        return {
          ...real,
          getCheckoutIntent: async () => {
            throw new Error('connection reset');
          },
        };
      },
    };
    const result = await createIntent(failingRead, 'st_a', { stable_coin: 1, amount_cents: 2500n });
    expect(result.applied).toBeNull();
    expect(result.firstReadError).toBe('connection reset');
    const id = result.created.allsvc_checkout_intent_id;
    const creation = await pipeline.db.execute<{ outcome: string }>(
      sql`select outcome from checkout_intent_creations where intent_id = ${id}`,
    );
    expect(creation.rows).toEqual([{ outcome: 'created' }]);
    // Before: no checkout_intents row, so nothing ever polled it. Now the poll sweeper finds it.
    const polled = await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ status: number | null; tracked_via: string }>(
        // poll_count is counted before the poll's snapshot is applied: wait for the status too.
        sql`select status, tracked_via from checkout_intents where id = ${id} and poll_count > 0 and status is not null`,
      );
      return rows[0];
    }, 45_000);
    expect(polled).toEqual({ status: 1, tracked_via: 'create' });
  }, 60_000);

  it('behavior: a confirmation read without its amounts is polled again until they come, then posted', async () => {
    const { created } = await createIntent(pipeline.payments, 'st_a', {
      stable_coin: 1,
      amount_cents: 2500n,
    });
    const id = created.allsvc_checkout_intent_id;
    await pipeline.waitFor(async () => (await pollCount(id)) > 0);
    // Only polling learns of it, and its first full read comes without the amounts.
    await pipeline.sandbox.control('/_sandbox/faults', {
      webhooks: { drop_next: 1 },
      withhold_amounts_next: 1,
    });
    expect((await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, {})).status).toBe(200);
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute(
        sql`select 1 from findings where ref_id = ${id} and kind = 'confirmed_without_amounts'`,
      );
      return rows.length > 0;
    }, 30_000);
    // Before: CONFIRMED settled the intent at once, polling stopped and rule 1 was never posted.
    expect(await postedLines(id)).toEqual(EXACT_LINES);
    const { rows } = await pipeline.db.execute<{ settled_by: string | null }>(
      sql`select settled_by from checkout_intents where id = ${id}`,
    );
    expect(rows[0]?.settled_by).toBe('poll');
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  }, 90_000);

  it('behavior: an inbox row back to received while its finished job is still kept gets a new job from the sweeper', async () => {
    const created = await pipeline.sandbox
      .client('st_a')
      .createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n });
    const id = created.allsvc_checkout_intent_id;
    expect((await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, {})).status).toBe(200);
    const log =
      await pipeline.sandbox.control<Array<{ webhook_id: string; body: Record<string, unknown> }>>(
        '/_sandbox/webhooks',
      );
    const webhookId = log.body.find((d) => d.body.all_svc_checkout_intent_id === id)?.webhook_id ?? '';
    const inboxRow = async () =>
      (
        await pipeline.db.execute<{ status: string; attempts: number }>(
          sql`select status, attempts from webhook_inbox where webhook_id = ${webhookId}`,
        )
      ).rows[0];
    const first = await pipeline.waitFor(async () => {
      const row = await inboxRow();
      return row?.status === 'processed' ? row : undefined;
    });
    expect(await postedLines(id)).toEqual(EXACT_LINES);

    // As after a replay whose requeue never reached Redis: the row waits, and BullMQ still keeps
    // the completed job under the webhook's id, so a plain add is ignored.
    await pipeline.db.execute(
      sql`update webhook_inbox set status = 'received', processed_at = null where webhook_id = ${webhookId}`,
    );
    const again = await pipeline.waitFor(async () => {
      const row = await inboxRow();
      return row?.status === 'processed' ? row : undefined;
    }, 45_000);
    expect(again.attempts).toBe(first.attempts + 1);
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual(EXACT_LINES);
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  }, 60_000);
});
