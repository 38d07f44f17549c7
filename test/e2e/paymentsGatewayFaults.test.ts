import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { QUEUE, webhookJob } from '../../jobs/queues.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { startGatewayProxy } from '../helpers/gatewayProxy.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * A gateway (CDN, reverse proxy) stands between the daemon and the service, for a store with
 * signed responses, and answers some requests itself: 429 HTML pages (with or without
 * Retry-After) and unsigned 502 pages. A 429 pauses the API key like a 40001 (nothing reaches the
 * gateway until the pause ends), a 502 is retried, nothing is taken for a signature failure, and
 * each payment is posted exactly once.
 */
const pipeline = await startPipeline({ storeOverrides: { signed_response: true } });
const gateway = await startGatewayProxy(pipeline.sandbox.url);
afterAll(() => gateway.close());
// The daemon reaches the service through the gateway; the sandbox's webhooks reach it directly.
pipeline.config.svcBaseUrl = gateway.url;
const daemon = await pipeline.startDaemon();
const client = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 3 } });

const EXACT_LINES = [
  'checkout.confirmed: assets:in_transit 24750000',
  'checkout.confirmed: expense:service_fees 250000',
  'checkout.confirmed: income:sales -25000000',
];

async function control(path: string, body?: unknown): Promise<void> {
  const res = await pipeline.sandbox.control(path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function untrackedIntent(): Promise<string> {
  return (await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n }))
    .allsvc_checkout_intent_id;
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

async function entriesPerIntent(ids: string[]): Promise<number[]> {
  const { rows } = await pipeline.db.execute<{ n: number }>(sql`
    select count(*)::int as n from ledger_entries
    where ref_type = 'checkout_intent' and ref_id = any(${`{${ids.join(',')}}`}::text[])
    group by ref_id, kind`);
  return rows.map((r) => r.n);
}

/** The daemon's count of API attempts with this outcome (envelope code or failure kind). */
async function apiOutcomes(outcome: string): Promise<number> {
  const metric = await daemon.metrics.apiRequests.get();
  return metric.values.filter((v) => v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
}

/** Requests that reached the gateway within (from, to), in ms since the epoch. */
function arrivedBetween(from: number, to: number) {
  return gateway.requests.filter((r) => r.at > from && r.at < to);
}

async function expectTrialBalanceZero(): Promise<void> {
  for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
}

describe('payments behind a gateway', () => {
  it('behavior: a gateway 429 page (Retry-After: 3) pauses the API key: nothing reaches the gateway until it ends, then each webhook is posted once', async () => {
    const first = await untrackedIntent();
    const rest = await Promise.all(Array.from({ length: 3 }, () => untrackedIntent()));
    const limitedBefore = await apiOutcomes('rate_limited');
    gateway.set({ rateLimitNext: 1, retryAfter: '3' });
    await control(`/_sandbox/intents/${first}/pay`, {});
    const refused = await pipeline.waitFor(async () => gateway.requests.find((r) => r.answer === 429));
    const pausedAt = refused.at;

    // Three more webhooks of the same key arrive during the pause: stored, but nothing is asked of
    // the service for them (nor for the first one again) while the gateway said to wait.
    await Promise.all(rest.map((id) => control(`/_sandbox/intents/${id}/pay`, {})));
    await pipeline.waitFor(async () => (await inboxRows(rest[2]!)).length > 0);
    while (Date.now() - pausedAt < 2_500) {
      expect(arrivedBetween(pausedAt, Number.POSITIVE_INFINITY)).toEqual([]);
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const id of [first, ...rest]) expect(await postedLines(id)).toEqual(EXACT_LINES);
    const after = gateway.requests.filter((r) => r.at > pausedAt);
    expect(Math.min(...after.map((r) => r.at)) - pausedAt).toBeGreaterThanOrEqual(2_900);
    expect(await entriesPerIntent([first, ...rest])).toEqual([1, 1, 1, 1]);
    expect(await apiOutcomes('rate_limited')).toBe(limitedBefore + 1);
    expect(await apiOutcomes('signature_error')).toBe(0);

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

  it('behavior: 429 pages without Retry-After and unsigned 502s while webhooks are processed: the key pauses 1 s after each 429, the 502s are retried, each payment posted once', async () => {
    const ids = await Promise.all(Array.from({ length: 4 }, () => untrackedIntent()));
    const since = Date.now();
    const limitedBefore = await apiOutcomes('rate_limited');
    gateway.set({ rateLimitNext: 3, retryAfter: undefined, badGatewayNext: 3 });
    await Promise.all(ids.map((id) => control(`/_sandbox/intents/${id}/pay`, {})));
    for (const id of ids) expect(await postedLines(id)).toEqual(EXACT_LINES);
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute(sql`select 1 from webhook_inbox where status = 'received'`);
      return rows.length === 0;
    });
    const answered = gateway.requests.filter((r) => r.at >= since);
    expect(answered.filter((r) => r.answer === 429)).toHaveLength(3);
    expect(answered.filter((r) => r.answer === 502)).toHaveLength(3);
    // After each 429 the key is paused for the 1 s default: requests already on their way may
    // still arrive (a worker trusts a "not paused" answer for 100 ms), none later within the pause.
    for (const r of answered.filter((a) => a.answer === 429)) {
      expect(arrivedBetween(r.at + 300, r.at + 900)).toEqual([]);
    }
    expect(await entriesPerIntent(ids)).toEqual([1, 1, 1, 1]);
    expect(await apiOutcomes('rate_limited')).toBe(limitedBefore + 3);
    expect(await apiOutcomes('signature_error')).toBe(0);
    expect(pipeline.logs.filter((l) => /signature check failed/.test(l))).toEqual([]);
    await expectTrialBalanceZero();
  }, 60_000);

  it('security: the store api_secret never appears in the daemon logs', () => {
    const secret = pipeline.config.stores[0]!.apiSecret;
    expect(pipeline.logs.length).toBeGreaterThan(0);
    expect(pipeline.logs.filter((line) => line.includes(secret))).toEqual([]);
  });
});
