import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../../src/svc/signing/requestSignature.ts';
import { startTestSandbox, testStore } from '../../helpers/sandboxHarness.ts';

/**
 * The sandbox's signatures checked by an implementation written here from the spec (node:crypto
 * only, nothing from src/svc/signing): a delivered webhook, and a signed response. Also the
 * dispatcher's retries and faults.
 */
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const hmac = (secret: string, s: string) => `v1=${createHmac('sha256', secret).update(s).digest('base64')}`;

interface Received {
  path: string;
  query: string;
  headers: Record<string, string>;
  body: Buffer;
}
const received: Received[] = [];
let answer = 200;
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://x');
    received.push({
      path: url.pathname,
      query: url.search.slice(1),
      headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
      body: Buffer.concat(chunks),
    });
    res.writeHead(answer).end(answer === 200 ? 'ok' : 'nope');
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks/checkout?tenant=a&x=1`;
afterAll(() => new Promise<void>((r) => receiver.close(() => r())));

const signed = testStore('st_signed', { signed_response: true, checkout_webhook_url: hookUrl });
const sandbox = await startTestSandbox({
  config: {
    rate_limit: { requests_per_second: 10_000, burst: 10_000 },
    businesses: [{ business_id: 'biz_1', stores: [signed] }],
  },
});
const secret = signed.api_secret as string;

async function waitFor<T>(fn: () => T | undefined, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(() => {
  received.length = 0;
});

describe('sandbox signatures, checked independently', () => {
  it('behavior: a delivered webhook verifies against the eight-line canonical string', async () => {
    const webhookId = `wh_${randomUUID()}`;
    sandbox.world.webhooks.send({
      kind: 'checkout',
      storeId: 'st_signed',
      webhookId,
      payload: { webhook_id: webhookId, amount_cents: 1050n },
    });
    const hit = await waitFor(() => received.find((r) => r.headers['x-webhook-id'] === webhookId));
    expect(hit.path).toBe('/hooks/checkout');
    expect(hit.query).toBe('tenant=a&x=1');
    expect(hit.body.toString()).toBe(`{"webhook_id":"${webhookId}","amount_cents":1050}`);
    const canonical = [
      'allsvc:webhook:v1',
      'POST',
      hit.path,
      hit.query,
      webhookId,
      hit.headers['x-webhook-timestamp'],
      hit.headers['x-webhook-nonce'],
      sha(hit.body),
    ].join('\n');
    expect(hit.headers['x-webhook-signature']).toBe(hmac(secret, canonical));
    expect(Math.abs(Number(hit.headers['x-webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
  });

  it('behavior: a signed response verifies against the seven-line canonical string, errors too', async () => {
    for (const path of ['/v1/test/ping', '/v1/test/fail']) {
      const nonce = randomUUID();
      const headers = signRequest({
        secret,
        method: 'GET',
        path,
        timestamp: Math.floor(Date.now() / 1000),
        nonce,
      }).headers;
      const res = await fetch(`${sandbox.url}${path}`, {
        headers: { 'X-API-Key': signed.api_key as string, ...headers },
      });
      const body = Buffer.from(await res.arrayBuffer());
      const h = (n: string) => res.headers.get(n) ?? '';
      const canonical = [
        res.status,
        path,
        nonce,
        sha(''),
        h('x-response-timestamp'),
        h('x-response-nonce'),
        sha(body),
      ].join('\n');
      expect(h('x-response-signature')).toBe(hmac(secret, canonical));
      expect(h('x-request-nonce')).toBe(nonce);
      expect(h('x-request-id')).toBe((JSON.parse(body.toString()) as { request_id: string }).request_id);
    }
  });
});

describe('sandbox webhook delivery', () => {
  it('behavior: a non-200 answer is retried on the sandbox clock and logged per attempt', async () => {
    answer = 500;
    const webhookId = `wh_${randomUUID()}`;
    sandbox.world.webhooks.send({
      kind: 'checkout',
      storeId: 'st_signed',
      webhookId,
      payload: { webhook_id: webhookId },
    });
    await waitFor(() => received.find((r) => r.headers['x-webhook-id'] === webhookId));
    answer = 200;
    await sandbox.control('/_sandbox/clock/advance', { seconds: 10 });
    const log =
      await sandbox.control<
        Array<{ webhook_id: string; state: string; attempts: Array<{ status: number }> }>
      >('/_sandbox/webhooks');
    const entry = log.body.find((d) => d.webhook_id === webhookId);
    expect(entry?.state).toBe('delivered');
    expect(entry?.attempts.map((a) => a.status)).toEqual([500, 200]);
    const nonces = received
      .filter((r) => r.headers['x-webhook-id'] === webhookId)
      .map((r) => r.headers['x-webhook-nonce']);
    expect(new Set(nonces).size).toBe(2);
  });

  it('behavior: faults drop, duplicate and reorder webhooks; a dropped one can be redelivered', async () => {
    await sandbox.control('/_sandbox/faults', { webhooks: { drop_next: 1 } });
    const dropped = `wh_drop_${randomUUID()}`;
    sandbox.world.webhooks.send({ kind: 'checkout', storeId: 'st_signed', webhookId: dropped, payload: {} });
    await sandbox.control('/_sandbox/faults', { webhooks: { duplicate: 1 } });
    const duplicated = `wh_dup_${randomUUID()}`;
    sandbox.world.webhooks.send({
      kind: 'checkout',
      storeId: 'st_signed',
      webhookId: duplicated,
      payload: {},
    });
    await waitFor(() =>
      received.filter((r) => r.headers['x-webhook-id'] === duplicated).length === 2 ? true : undefined,
    );
    expect(received.some((r) => r.headers['x-webhook-id'] === dropped)).toBe(false);

    await sandbox.control('/_sandbox/faults', { webhooks: { reorder: 2 } });
    const first = `wh_first_${randomUUID()}`;
    const second = `wh_second_${randomUUID()}`;
    sandbox.world.webhooks.send({ kind: 'checkout', storeId: 'st_signed', webhookId: first, payload: {} });
    sandbox.world.webhooks.send({ kind: 'checkout', storeId: 'st_signed', webhookId: second, payload: {} });
    await waitFor(() => (received.some((r) => r.headers['x-webhook-id'] === first) ? true : undefined));
    const order = received
      .map((r) => r.headers['x-webhook-id'])
      .filter((id) => id === first || id === second);
    expect(order).toEqual([second, first]);

    const redelivered = await sandbox.control<{ state: string }>(
      `/_sandbox/webhooks/${dropped}/redeliver`,
      {},
    );
    expect(redelivered.body.state).toBe('delivered');
    expect(received.some((r) => r.headers['x-webhook-id'] === dropped)).toBe(true);
  });

  it('behavior: injected 40001 and 90000 answer the next signed requests, then clear', async () => {
    const client = sandbox.client('st_signed');
    await sandbox.control('/_sandbox/faults', {
      rate_limit_next: 1,
      retry_after: '2s',
      error_next: { code: 90000, count: 1 },
    });
    await expect(client.ping()).rejects.toMatchObject({ code: 40001, httpStatus: 429, retryAfterMs: 2000 });
    await expect(client.ping()).rejects.toMatchObject({ code: 90000, httpStatus: 500 });
    await expect(client.ping()).resolves.toEqual({ pong: 'ok' });
  });

  it('error: the control API refuses bad input with a reason', async () => {
    expect((await sandbox.control('/_sandbox/clock/advance', { seconds: -1 })).status).toBe(400);
    expect((await sandbox.control('/_sandbox/faults', { nonsense: true })).status).toBe(400);
    expect((await sandbox.control('/_sandbox/chain/reorg', { chain_id: 1, depth: 1 })).status).toBe(404);
  });
});
