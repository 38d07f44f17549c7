import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { QUEUE, webhookJob } from '../../jobs/queues.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { applyIntentSnapshot } from '../../src/payments/applyIntentSnapshot.ts';
import { createIntent } from '../../src/payments/createIntent.ts';
import { CheckoutStatus } from '../../src/svc/models/checkoutStatus.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * The sandbox misbehaves as a real service would: webhooks dropped, duplicated, reordered and
 * racing the poller, the API answering bursts of 429 (40001) and 500 (90000). Whatever happens,
 * each confirmed intent gets exactly one rule-1 entry (docs/accounting.md) and the trial balance
 * nets to zero.
 */
const pipeline = await startPipeline();
const daemon = await pipeline.startDaemon();
const client = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 3 } });
const secret = pipeline.config.stores[0]!.apiSecret;

/** Rule 1 for 25 USDT paid exactly through the temporary wallet (fee 1%). */
const EXACT_LINES = [
  'checkout.confirmed: assets:in_transit 24750000',
  'checkout.confirmed: expense:service_fees 250000',
  'checkout.confirmed: income:sales -25000000',
];

interface Delivery {
  webhook_id: string;
  state: string;
  body: { all_svc_checkout_intent_id: string };
  attempts: Array<{ status: number | null; response_body: string | null; duplicate: boolean }>;
}

async function control<T = unknown>(path: string, body?: unknown): Promise<T> {
  const res = await pipeline.sandbox.control<T>(path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function trackedIntent(): Promise<string> {
  const { created } = await createIntent(pipeline.payments, 'st_a', { stable_coin: 1, amount_cents: 2500n });
  return created.allsvc_checkout_intent_id;
}

async function untrackedIntent(): Promise<string> {
  const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n });
  return created.allsvc_checkout_intent_id;
}

async function deliveryOf(intentId: string): Promise<Delivery> {
  return pipeline.waitFor(async () => {
    const all = await control<Delivery[]>('/_sandbox/webhooks');
    return all.find((d) => d.body.all_svc_checkout_intent_id === intentId);
  });
}

async function postedLines(id: string): Promise<string[]> {
  return pipeline.waitFor(async () => {
    const lines = await ledgerLinesOf(pipeline.db, id);
    return lines.length > 0 ? lines : undefined;
  }, 30_000);
}

async function inboxRows(intentId: string) {
  const { rows } = await pipeline.db.execute<{ webhook_id: string; status: string }>(sql`
    select webhook_id, status from webhook_inbox
    where convert_from(body, 'UTF8')::jsonb->>'all_svc_checkout_intent_id' = ${intentId}
    order by received_at`);
  return rows;
}

async function settledBy(id: string): Promise<string | null | undefined> {
  const { rows } = await pipeline.db.execute<{ settled_by: string | null }>(
    sql`select settled_by from checkout_intents where id = ${id}`,
  );
  return rows[0]?.settled_by;
}

/** Every entry of these intents, counted per (ref, kind): each must be exactly one. */
async function entriesPerIntent(ids: string[]): Promise<Map<string, number>> {
  const { rows } = await pipeline.db.execute<{ ref_id: string; n: number }>(sql`
    select ref_id, count(*)::int as n from ledger_entries
    where ref_type = 'checkout_intent' and ref_id = any(${`{${ids.join(',')}}`}::text[])
    group by ref_id, kind`);
  return new Map(rows.map((r) => [r.ref_id, r.n]));
}

async function expectTrialBalanceZero(): Promise<void> {
  for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
}

/** Every inbox row of the file is done: nothing is left for a late job to post twice. */
async function inboxSettled(): Promise<void> {
  await pipeline.waitFor(async () => {
    const { rows } = await pipeline.db.execute(sql`select 1 from webhook_inbox where status = 'received'`);
    return rows.length === 0;
  });
}

describe('payments delivery faults: webhooks', () => {
  it('behavior: webhook dropped, polling finds the payment and posts it once', async () => {
    const id = await trackedIntent();
    await control('/_sandbox/faults', { webhooks: { drop_next: 1 } });
    await control(`/_sandbox/intents/${id}/pay`, {});
    expect(await postedLines(id)).toEqual(EXACT_LINES);
    expect(await settledBy(id)).toBe('poll');
    const delivery = await deliveryOf(id);
    expect(delivery.state).toBe('dropped');
    expect(await inboxRows(id)).toEqual([]);

    // The webhook turns up after the poll settled the intent: stored, processed, nothing new.
    await control(`/_sandbox/webhooks/${delivery.webhook_id}/redeliver`, {});
    await pipeline.waitFor(async () => (await inboxRows(id))[0]?.status === 'processed');
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual(EXACT_LINES);
    await expectTrialBalanceZero();
  });

  it('behavior: webhook delivered seven times (duplicate fault, five concurrent redeliveries) posts once', async () => {
    const id = await untrackedIntent();
    await control('/_sandbox/faults', { webhooks: { duplicate: 1 } });
    await control(`/_sandbox/intents/${id}/pay`, {});
    const { webhook_id } = await deliveryOf(id);
    await Promise.all(
      Array.from({ length: 5 }, () => control(`/_sandbox/webhooks/${webhook_id}/redeliver`, {})),
    );
    const delivery = await pipeline.waitFor(async () => {
      const d = await deliveryOf(id);
      return d.attempts.length >= 7 ? d : undefined;
    });
    // Every delivery was answered 200 (stored once, the rest acknowledged as duplicates).
    expect(delivery.attempts.map((a) => a.status)).toEqual(Array(7).fill(200));
    expect(delivery.attempts.filter((a) => a.response_body?.includes('"duplicate":true'))).toHaveLength(6);
    expect(await postedLines(id)).toEqual(EXACT_LINES);
    await inboxSettled();
    expect(await inboxRows(id)).toEqual([{ webhook_id, status: 'processed' }]);
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual(EXACT_LINES);
    await expectTrialBalanceZero();
  });

  it('behavior: webhooks reordered (newest first) while the poller races them post each intent once', async () => {
    const ids = [await trackedIntent(), await trackedIntent(), await trackedIntent()];
    await control('/_sandbox/faults', { webhooks: { reorder: 3 } });
    for (const id of ids) await control(`/_sandbox/intents/${id}/pay`, {});
    for (const id of ids) expect(await postedLines(id)).toEqual(EXACT_LINES);
    await pipeline.waitFor(async () => {
      for (const id of ids) if ((await inboxRows(id)).length === 0) return false;
      return true;
    });
    await inboxSettled();
    // The sandbox delivered the last payment's webhook first.
    const { rows } = await pipeline.db.execute<{ intent: string }>(sql`
      select convert_from(body, 'UTF8')::jsonb->>'all_svc_checkout_intent_id' as intent from webhook_inbox
      where convert_from(body, 'UTF8')::jsonb->>'all_svc_checkout_intent_id' = any(${`{${ids.join(',')}}`}::text[])
      order by received_at`);
    expect(rows.map((r) => r.intent)).toEqual([...ids].reverse());
    expect([...(await entriesPerIntent(ids)).values()]).toEqual([1, 1, 1]);
    for (const id of ids) expect(await ledgerLinesOf(pipeline.db, id)).toEqual(EXACT_LINES);
    await expectTrialBalanceZero();
  });

  it('behavior: a webhook delayed until after the poll settled the intent changes nothing', async () => {
    const id = await trackedIntent();
    await control('/_sandbox/faults', { webhooks: { delay_ms: 5_000 } });
    await control(`/_sandbox/intents/${id}/pay`, {});
    await control('/_sandbox/faults', { webhooks: { delay_ms: 0 } });
    expect(await postedLines(id)).toEqual(EXACT_LINES);
    expect(await settledBy(id)).toBe('poll');
    // Five seconds of sandbox time (well inside the 300 s signature skew) release the webhook.
    await control('/_sandbox/clock/advance', { seconds: 6 });
    await pipeline.waitFor(async () => (await inboxRows(id))[0]?.status === 'processed');
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual(EXACT_LINES);
    const { rows } = await pipeline.db.execute<{ to: number; source: string }>(sql`
      select to_status as "to", source from checkout_intent_status_history where intent_id = ${id} and to_status = 20`);
    expect(rows).toEqual([{ to: CheckoutStatus.CONFIRMED, source: 'poll' }]);
    await expectTrialBalanceZero();
  });
});

describe('payments delivery faults: a poll answer overtaken by the webhook', () => {
  it('behavior: a stale poll (ON_CHAIN) applied after the webhook posted CONFIRMED changes nothing', async () => {
    const id = await untrackedIntent();
    await control(`/_sandbox/intents/${id}/pay`, {});
    expect(await postedLines(id)).toEqual(EXACT_LINES);
    const historyBefore = await pipeline.db.execute(
      sql`select from_status, to_status, source from checkout_intent_status_history where intent_id = ${id} order by id`,
    );
    // What pollIntent applies when its GET answered while the sweep was still on chain and the
    // webhook committed first.
    const current = await client.getCheckoutIntent(id);
    const stale = { ...current, status: CheckoutStatus.ON_CHAIN };
    const result = await pipeline.payments.db.transaction((tx) =>
      applyIntentSnapshot(tx, pipeline.payments, {
        storeId: 'st_a',
        intent: stale,
        source: 'poll',
        observedAt: new Date(),
      }),
    );
    expect(result).toMatchObject({ status: CheckoutStatus.CONFIRMED, terminal: true, posted: null });
    const { rows } = await pipeline.db.execute<{ status: number; settled_by: string }>(
      sql`select status, settled_by from checkout_intents where id = ${id}`,
    );
    expect(rows).toEqual([{ status: CheckoutStatus.CONFIRMED, settled_by: 'webhook' }]);
    const historyAfter = await pipeline.db.execute(
      sql`select from_status, to_status, source from checkout_intent_status_history where intent_id = ${id} order by id`,
    );
    expect(historyAfter.rows).toEqual(historyBefore.rows);
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual(EXACT_LINES);
  });
});

describe('payments delivery faults: API bursts', () => {
  /** The daemon's count of API answers with this envelope code. */
  async function apiAnswers(code: number): Promise<number> {
    const metric = await daemon.metrics.apiRequests.get();
    return metric.values.filter((v) => v.labels.outcome === String(code)).reduce((n, v) => n + v.value, 0);
  }

  it('behavior: 429 and 500 bursts while webhooks are processed and intents polled, each posted once', async () => {
    const tracked = await Promise.all(Array.from({ length: 4 }, () => trackedIntent()));
    const untracked = await Promise.all(Array.from({ length: 4 }, () => untrackedIntent()));
    const ids = [...tracked, ...untracked];
    const before = { rateLimited: await apiAnswers(40001), errors: await apiAnswers(90000) };
    // From here on only the daemon signs requests: the faults are all its own.
    await control('/_sandbox/faults', {
      rate_limit_next: 8,
      retry_after: '1s',
      error_next: { code: 90000, count: 8 },
    });
    await Promise.all(ids.map((id) => control(`/_sandbox/intents/${id}/pay`, {})));
    for (const id of ids) expect(await postedLines(id)).toEqual(EXACT_LINES);
    await inboxSettled();
    expect(await apiAnswers(40001)).toBe(before.rateLimited + 8);
    expect(await apiAnswers(90000)).toBe(before.errors + 8);
    const faults = await control<{ rateLimitNext: number; errorNext: unknown }>('/_sandbox/faults', {});
    expect(faults).toMatchObject({ rateLimitNext: 0, errorNext: null });
    expect([...(await entriesPerIntent(ids)).values()]).toEqual(Array(8).fill(1));
    for (const id of ids) expect(await ledgerLinesOf(pipeline.db, id)).toEqual(EXACT_LINES);
    await expectTrialBalanceZero();
  }, 60_000);

  /** Every API request the daemon sent, whatever the answer. */
  async function apiRequestsSent(): Promise<number> {
    const metric = await daemon.metrics.apiRequests.get();
    return metric.values.reduce((n, v) => n + v.value, 0);
  }

  it('behavior: a 40001 pauses the API key for retry_after: no request of that key until it ends, then each webhook is posted once', async () => {
    const first = await untrackedIntent();
    const rest = await Promise.all(Array.from({ length: 3 }, () => untrackedIntent()));
    const limited = await apiAnswers(40001);
    await control('/_sandbox/faults', { rate_limit_next: 1, retry_after: '4s' });
    await control(`/_sandbox/intents/${first}/pay`, {});
    await pipeline.waitFor(async () => (await apiAnswers(40001)) > limited);
    const pausedAt = Date.now();
    const sentAtPause = await apiRequestsSent();

    // Three more webhooks of the same key arrive during the pause: stored, but nothing is asked of
    // the API for them (nor for the first one again) while the service said to wait.
    await Promise.all(rest.map((id) => control(`/_sandbox/intents/${id}/pay`, {})));
    await pipeline.waitFor(async () => (await inboxRows(rest[2]!)).length > 0);
    while (Date.now() - pausedAt < 2_500) {
      expect(await apiRequestsSent()).toBe(sentAtPause);
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const id of [first, ...rest]) expect(await postedLines(id)).toEqual(EXACT_LINES);
    expect(Date.now() - pausedAt).toBeGreaterThanOrEqual(3_000);
    expect(await apiAnswers(40001)).toBe(limited + 1);
    expect([...(await entriesPerIntent([first, ...rest])).values()]).toEqual([1, 1, 1, 1]);
    // The refused webhook's job waited out the pause instead of failing an attempt.
    const queue = new Queue(QUEUE.webhooks, {
      connection: { url: pipeline.config.redisUrl },
      prefix: pipeline.config.queuePrefix,
    });
    try {
      const [row] = await inboxRows(first);
      const job = await queue.getJob(webhookJob.jobId(row!.webhook_id));
      expect(await job?.getState()).toBe('completed');
      expect(job?.attemptsMade).toBe(1);
    } finally {
      await queue.close();
    }
    await expectTrialBalanceZero();
  }, 60_000);

  it('security: the store api_secret never appears in the daemon logs', () => {
    expect(pipeline.logs.length).toBeGreaterThan(0);
    expect(pipeline.logs.filter((line) => line.includes(secret))).toEqual([]);
  });
});
