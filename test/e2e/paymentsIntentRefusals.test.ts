import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { QUEUE, webhookJob } from '../../jobs/queues.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * The service refuses to give the intent a signed webhook names: 30001 (the store's IP
 * allowlist, for a few minutes) or 50001 (not found). The signature proved the id authentic, so
 * the intent is tracked at the first refusal and the poll sweeper books the payment once the
 * service answers; the webhook's job retries with BullMQ's backoff, and its last attempt fails the
 * row with a finding for a person. Before, the first refusal failed the webhook for good and
 * nothing tracked its intent: every payment learnt only by webhook during the slip was lost.
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

async function control<T = unknown>(path: string, body?: unknown): Promise<T> {
  const res = await pipeline.sandbox.control<T>(path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** An intent created at the service behind the daemon's back: only its webhook can tell of it. */
async function untrackedIntent(): Promise<string> {
  const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n });
  return created.allsvc_checkout_intent_id;
}

async function postedLines(id: string): Promise<string[]> {
  return pipeline.waitFor(async () => {
    const lines = await ledgerLinesOf(pipeline.db, id);
    return lines.length > 0 ? lines : undefined;
  }, 30_000);
}

type InboxRow = {
  webhook_id: string;
  status: string;
  attempts: number;
  error: string | null;
};

async function inboxRowOf(intentId: string): Promise<InboxRow | undefined> {
  const { rows } = await pipeline.db.execute<InboxRow>(sql`
    select webhook_id, status, attempts, error from webhook_inbox
    where convert_from(body, 'UTF8')::jsonb->>'all_svc_checkout_intent_id' = ${intentId}`);
  return rows[0];
}

async function openFindingsOf(webhookId: string) {
  const { rows } = await pipeline.db.execute<{ kind: string; details: Record<string, unknown> }>(sql`
    select kind, details from findings where ref_type = 'webhook' and ref_id = ${webhookId} and resolved_at is null`);
  return rows;
}

async function trackingOf(id: string) {
  const { rows } = await pipeline.db.execute<{ tracked_via: string; settled_by: string | null }>(
    sql`select tracked_via, settled_by from checkout_intents where id = ${id}`,
  );
  return rows[0];
}

/** The daemon's count of API answers with this envelope code. */
async function apiAnswers(code: number): Promise<number> {
  const metric = await daemon.metrics.apiRequests.get();
  return metric.values.filter((v) => v.labels.outcome === String(code)).reduce((n, v) => n + v.value, 0);
}

async function expectTrialBalanceZero(): Promise<void> {
  for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
}

describe('payments: the service refuses a webhook intent', () => {
  it('behavior: an IP-allowlist slip (30001) on the intent read: the job retries and the payment is booked once', async () => {
    const id = await untrackedIntent();
    const refused = await apiAnswers(30001);
    // From here on only the daemon signs requests: the refusals are all its own.
    await control('/_sandbox/faults', { error_next: { code: 30001, count: 2 } });
    await control(`/_sandbox/intents/${id}/pay`, {});

    // Before: the first 30001 failed the webhook for good and nothing tracked the intent, so
    // nothing was ever booked.
    expect(await postedLines(id)).toEqual(EXACT_LINES);
    const row = await pipeline.waitFor(async () => {
      const r = await inboxRowOf(id);
      return r?.status === 'processed' ? r : undefined;
    });
    expect(await apiAnswers(30001)).toBe(refused + 2);
    expect(row.error).toBeNull();
    expect(await openFindingsOf(row.webhook_id)).toEqual([]);
    expect(await trackingOf(id)).toMatchObject({ tracked_via: 'webhook' });
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual(EXACT_LINES);
    await expectTrialBalanceZero();
  }, 60_000);

  it('error: a 50001 that lasts fails the webhook after 3 attempts with a finding; the poll books the payment once the service answers', async () => {
    const id = await untrackedIntent();
    await control('/_sandbox/faults', { error_next: { code: 50001, count: 10_000 } });
    await control(`/_sandbox/intents/${id}/pay`, {});

    const failed = await pipeline.waitFor(async () => {
      const r = await inboxRowOf(id);
      return r?.status === 'failed' ? r : undefined;
    });
    // Three attempts (BullMQ's backoff: 1 s, then 2 s), the last one failing the row.
    expect(failed.attempts).toBe(3);
    expect(failed.error).toMatch(/50001/);
    expect(await openFindingsOf(failed.webhook_id)).toEqual([
      {
        kind: 'webhook_for_unknown_intent',
        details: { intent_id: id, code: 50001, attempts: 3, tracked_intent: id },
      },
    ]);
    const queue = new Queue(QUEUE.webhooks, {
      connection: { url: pipeline.config.redisUrl },
      prefix: pipeline.config.queuePrefix,
    });
    try {
      const job = await queue.getJob(webhookJob.jobId(failed.webhook_id));
      expect(await job?.getState()).toBe('completed');
      expect(job?.returnvalue).toBe('unusable');
    } finally {
      await queue.close();
    }
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual([]);
    // Tracked at the first refusal: the poll sweeper keeps asking.
    expect(await trackingOf(id)).toEqual({ tracked_via: 'webhook', settled_by: null });

    // The service answers again (the next request uses up the last injected error).
    await control('/_sandbox/faults', { error_next: { code: 50001, count: 1 } });
    expect(await postedLines(id)).toEqual(EXACT_LINES);
    expect(await trackingOf(id)).toEqual({ tracked_via: 'webhook', settled_by: 'poll' });
    // The webhook stays failed with its finding, for a person (`webhooks replay`).
    expect((await inboxRowOf(id))?.status).toBe('failed');
    expect((await openFindingsOf(failed.webhook_id)).map((f) => f.kind)).toEqual([
      'webhook_for_unknown_intent',
    ]);
    await expectTrialBalanceZero();
  }, 60_000);

  it('security: the store api_secret never appears in the daemon logs', () => {
    expect(pipeline.logs.length).toBeGreaterThan(0);
    expect(pipeline.logs.filter((line) => line.includes(secret))).toEqual([]);
  });
});
