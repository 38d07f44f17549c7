import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.ts';
import { systemClock } from '../../src/clock.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { signWebhook } from '../../src/svc/signing/webhookSignature.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * Webhooks the test sends itself to the daemon's intake: forged (tampered body, stale timestamp,
 * reused nonce) ones get 401 with a reason, are not stored and post nothing, although their body
 * is a real payment the daemon has not seen yet (its own webhook was dropped and it is not
 * tracked); an oversize body gets 413, malformed JSON under a valid signature 400 and a row
 * stored as rejected. At the end the real webhook is delivered and posts the payment once.
 */
const pipeline = await startPipeline();
const daemon = await pipeline.startDaemon();
const store = pipeline.config.stores[0]!;
const client = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 3 } });
const WEBHOOK_URL = `${pipeline.daemonUrl}/webhooks/checkout`;

interface Answer {
  status: number;
  body: { ok: boolean; reason?: string; duplicate?: boolean };
}

/** Signs `signed` as the service would and POSTs `sent` (default: the same bytes). */
async function sendWebhook(args: {
  signed: string | Buffer;
  sent?: string | Buffer;
  webhookId?: string;
  nonce?: string;
  clock?: Clock;
  apiKey?: string;
  dropHeader?: string;
  /** The query string signed (without '?'); `sentQuery` the one sent, by default the same. */
  query?: string;
  sentQuery?: string;
}): Promise<Answer & { webhookId: string; nonce: string }> {
  const webhookId = args.webhookId ?? randomUUID();
  const nonce = args.nonce ?? randomUUID();
  const signature: Record<string, string> = signWebhook({
    secret: store.apiSecret,
    method: 'POST',
    path: '/webhooks/checkout',
    query: args.query,
    webhookId,
    body: args.signed,
    clock: args.clock ?? systemClock,
    nonce,
  });
  if (args.dropHeader) delete signature[args.dropHeader];
  const sentQuery = args.sentQuery ?? args.query;
  const res = await fetch(sentQuery ? `${WEBHOOK_URL}?${sentQuery}` : WEBHOOK_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-API-Key': args.apiKey ?? store.apiKey, ...signature },
    body: args.sent ?? args.signed,
  });
  return { status: res.status, body: (await res.json()) as Answer['body'], webhookId, nonce };
}

async function inboxRow(webhookId: string) {
  const { rows } = await pipeline.db.execute<{ status: string; error: string | null }>(
    sql`select status, error from webhook_inbox where webhook_id = ${webhookId}`,
  );
  return rows[0];
}

async function nonceStored(nonce: string): Promise<boolean> {
  const { rows } = await pipeline.db.execute(
    sql`select 1 from webhook_nonces where nonce = ${`webhook:${nonce}`}`,
  );
  return rows.length > 0;
}

async function intentKnown(id: string): Promise<boolean> {
  const { rows } = await pipeline.db.execute(sql`select 1 from checkout_intents where id = ${id}`);
  return rows.length > 0;
}

async function rejections(reason: string): Promise<number> {
  const metric = await daemon.metrics.webhooksRejected.get();
  return metric.values.filter((v) => v.labels.reason === reason).reduce((n, v) => n + v.value, 0);
}

/** A paid intent whose real webhook was dropped: the daemon knows nothing of it. */
async function unseenPayment(): Promise<{
  intentId: string;
  webhookId: string;
  body: Record<string, unknown>;
}> {
  const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n });
  const intentId = created.allsvc_checkout_intent_id;
  expect((await pipeline.sandbox.control('/_sandbox/faults', { webhooks: { drop_next: 1 } })).status).toBe(
    200,
  );
  expect((await pipeline.sandbox.control(`/_sandbox/intents/${intentId}/pay`, {})).status).toBe(200);
  const log =
    await pipeline.sandbox.control<
      Array<{ webhook_id: string; state: string; body: Record<string, unknown> }>
    >('/_sandbox/webhooks');
  const delivery = log.body.find((d) => d.body.all_svc_checkout_intent_id === intentId);
  expect(delivery?.state).toBe('dropped');
  return { intentId, webhookId: delivery!.webhook_id, body: delivery!.body };
}

const payment = await unseenPayment();
const paymentJson = JSON.stringify(payment.body);

/** Nothing of the forged webhook reached the database, and the payment is still unposted. */
async function expectNothingStored(answer: { webhookId: string; nonce: string }): Promise<void> {
  expect(await inboxRow(answer.webhookId)).toBeUndefined();
  expect(await nonceStored(answer.nonce)).toBe(false);
  expect(await intentKnown(payment.intentId)).toBe(false);
  expect(await ledgerLinesOf(pipeline.db, payment.intentId)).toEqual([]);
}

describe('payments intake: forged webhooks are refused with 401 and post nothing', () => {
  it('error: tampered body (signature over other bytes) is 401 bad_signature', async () => {
    const tampered = paymentJson.replace('"actual_paid_amount":"25"', '"actual_paid_amount":"2500"');
    expect(tampered).not.toBe(paymentJson);
    const before = await rejections('bad_signature');
    const answer = await sendWebhook({ signed: paymentJson, sent: tampered });
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ ok: false, reason: 'bad_signature' });
    expect(await rejections('bad_signature')).toBe(before + 1);
    await expectNothingStored(answer);
  });

  it.each([
    ['400 s old', -400],
    ['400 s ahead', 400],
  ])('error: stale timestamp (%s) is 401 stale_timestamp', async (_name, offsetSeconds) => {
    const skewed: Clock = { now: () => new Date(Date.now() + offsetSeconds * 1000) };
    const answer = await sendWebhook({ signed: paymentJson, clock: skewed });
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ ok: false, reason: 'stale_timestamp' });
    await expectNothingStored(answer);
  });

  it('error: replayed webhook (same nonce) is 401 nonce_reused, nothing stored twice', async () => {
    // A valid webhook the daemon accepts: it claims nonce X. Its body names an unpaid intent, so
    // the daemon records it, finds that the API disagrees (not confirmed) and posts nothing.
    const decoy = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 1200n });
    const decoyId = decoy.allsvc_checkout_intent_id;
    const decoyBody = JSON.stringify({
      ...payment.body,
      all_svc_checkout_intent_id: decoyId,
      webhook_id: 'decoy',
    });
    const first = await sendWebhook({ signed: decoyBody });
    expect(first).toMatchObject({ status: 200, body: { ok: true } });

    // The same delivery again, byte for byte.
    const replay = await sendWebhook({ signed: decoyBody, webhookId: first.webhookId, nonce: first.nonce });
    expect(replay.status).toBe(401);
    expect(replay.body).toEqual({ ok: false, reason: 'nonce_reused' });

    // A correctly signed webhook for the real payment, under the nonce already used.
    const reused = await sendWebhook({ signed: paymentJson, nonce: first.nonce });
    expect(reused.status).toBe(401);
    expect(reused.body).toEqual({ ok: false, reason: 'nonce_reused' });
    expect(await inboxRow(reused.webhookId)).toBeUndefined();
    expect(await intentKnown(payment.intentId)).toBe(false);
    expect(await ledgerLinesOf(pipeline.db, payment.intentId)).toEqual([]);

    const { rows } = await pipeline.db.execute(
      sql`select 1 from webhook_inbox where webhook_id = ${first.webhookId}`,
    );
    expect(rows).toHaveLength(1);
    const finding = await pipeline.waitFor(async () => {
      const found = await pipeline.db.execute<{ details: { differences: Record<string, unknown> } }>(sql`
        select details from findings where kind = 'webhook_api_mismatch' and ref_id = ${decoyId}`);
      return found.rows[0];
    });
    expect(finding.details.differences).toHaveProperty('status');
    expect(await ledgerLinesOf(pipeline.db, decoyId)).toEqual([]);
  });

  it.each([
    ['unknown X-API-Key', { apiKey: 'pk_nobody' }, 'unknown_api_key'],
    ['no X-Webhook-Signature', { dropHeader: 'X-Webhook-Signature' }, 'missing_header: X-Webhook-Signature'],
    ['no X-Webhook-Nonce', { dropHeader: 'X-Webhook-Nonce' }, 'missing_header: X-Webhook-Nonce'],
  ])('error: %s is 401 with its reason', async (_name, options, reason) => {
    const answer = await sendWebhook({ signed: paymentJson, ...options });
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ ok: false, reason });
    await expectNothingStored(answer);
  });
});

describe('payments intake: bodies the daemon cannot take', () => {
  it('error: a body over 1 MiB is 413, nothing stored', async () => {
    const huge = JSON.stringify({ ...payment.body, padding: 'x'.repeat(1024 * 1024) });
    const answer = await sendWebhook({ signed: huge });
    expect(answer.status).toBe(413);
    expect(answer.body.ok).toBe(false);
    expect(answer.body.reason).toMatch(/1 MiB/);
    expect(await rejections('too_large')).toBe(1);
    await expectNothingStored(answer);
  });

  it('error: malformed JSON under a valid signature is 400 and stored as rejected', async () => {
    const broken = paymentJson.slice(0, -7);
    const answer = await sendWebhook({ signed: broken });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ ok: false, reason: 'malformed_json' });
    expect(await inboxRow(answer.webhookId)).toEqual({ status: 'rejected', error: 'body is not valid JSON' });
    const { rows } = await pipeline.db.execute<{ body: Buffer }>(
      sql`select body from webhook_inbox where webhook_id = ${answer.webhookId}`,
    );
    expect(Buffer.from(rows[0]!.body).toString('utf8')).toBe(broken);
    // Kept for audit only: no job picks it up, nothing is posted.
    await new Promise((r) => setTimeout(r, 500));
    expect(await inboxRow(answer.webhookId)).toMatchObject({ status: 'rejected' });
    expect(await intentKnown(payment.intentId)).toBe(false);
  });
});

describe('payments intake: the signature covers the query string as sent', () => {
  // Malformed JSON is answered 400 only after the signature passed, and posts nothing.
  const broken = '{"query":';

  it('behavior: a webhook signed over its path and query passes verification', async () => {
    const answer = await sendWebhook({ signed: broken, query: 'store=st_a&x=%2F1' });
    expect(answer).toMatchObject({ status: 400, body: { reason: 'malformed_json' } });
  });

  it('error: a query not covered by the signature is 401 bad_signature', async () => {
    const added = await sendWebhook({ signed: broken, sentQuery: 'store=st_a' });
    expect(added).toMatchObject({ status: 401, body: { reason: 'bad_signature' } });
    const changed = await sendWebhook({ signed: broken, query: 'x=%2F1', sentQuery: 'x=/1' });
    expect(changed).toMatchObject({ status: 401, body: { reason: 'bad_signature' } });
    expect(await inboxRow(added.webhookId)).toBeUndefined();
    expect(await inboxRow(changed.webhookId)).toBeUndefined();
  });
});

describe('payments intake: after the refusals', () => {
  it('behavior: the real webhook, redelivered, posts the payment exactly once', async () => {
    const res = await pipeline.sandbox.control(`/_sandbox/webhooks/${payment.webhookId}/redeliver`, {});
    expect(res.status).toBe(200);
    const lines = await pipeline.waitFor(async () => {
      const found = await ledgerLinesOf(pipeline.db, payment.intentId);
      return found.length > 0 ? found : undefined;
    });
    expect(lines).toEqual([
      'checkout.confirmed: assets:in_transit 24750000',
      'checkout.confirmed: expense:service_fees 250000',
      'checkout.confirmed: income:sales -25000000',
    ]);
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  });

  it('security: the store api_secret never appears in the daemon logs', () => {
    expect(pipeline.logs.length).toBeGreaterThan(0);
    expect(pipeline.logs.filter((line) => line.includes(store.apiSecret))).toEqual([]);
  });
});
