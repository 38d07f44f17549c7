/**
 * The retry policy as the client applies it over real HTTP: 40001 and its retry_after, and the
 * jittered exponential backoff after 90000, 99999 and network failures on the calls that are safe
 * to repeat. `sleep` and `random` are injected so the delays are observed, not spent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../../src/clock.ts';
import type { SvcClient } from '../../../src/svc/client.ts';
import { SvcApiError, SvcTransportError } from '../../../src/svc/errors.ts';
import {
  API_SECRET,
  apiError,
  CLAIM_LINK_ID,
  cancelResultPayload,
  checkoutIntentPayload,
  claimLinkRequest,
  claimLinkResultPayload,
  closedPort,
  collectedErrorTexts,
  destroy,
  hang,
  INTENT_ID,
  makeClient,
  ok,
  type Reply,
  recordingSleep,
  rejectionOf,
  sequence,
  startFakeService,
  stopFakeServices,
} from './fakeService.ts';

afterEach(stopFakeServices);

const backoff = { baseDelayMs: 100, maxDelayMs: 10_000, maxAttempts: 5, maxRetryAfterMs: 60_000 };

/** Full jitter: the delay after failed attempt n is within [0, min(max, base * 2^(n-1))]. */
function expectFullJitter(delays: number[], settings: { baseDelayMs: number; maxDelayMs: number }) {
  delays.forEach((d, i) => {
    expect(d).toBeGreaterThanOrEqual(0);
    expect(d).toBeLessThanOrEqual(Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** i));
  });
}

describe('retry: 40001 rate limited', () => {
  it.each([
    ['2s', 2000],
    ['1500ms', 1500],
    ['1 seconds', 1000],
    ['1m', 60_000],
  ])(
    'retry: 40001 honours retry_after "%s" (sleeps exactly %i ms, then succeeds)',
    async (retryAfter, ms) => {
      const service = await startFakeService();
      service.script(apiError(40001, 429, { retry_after: retryAfter }), ok({ pong: 'ok' }));
      const { delays, sleep } = recordingSleep();
      const client = makeClient(service, { sleep, random: () => 0.5 });
      await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
      expect(delays).toEqual([ms]);
      expect(service.requests).toHaveLength(2);
      expect(service.requests[0]?.nonce).not.toBe(service.requests[1]?.nonce);
    },
  );

  it('retry: 40001 with a retry_after above retry.maxRetryAfterMs is not waited for; SvcApiError carries retryAfterMs', async () => {
    const service = await startFakeService();
    service.script(apiError(40001, 429, { retry_after: '2s' }, { requestId: 'req_rl' }), ok({ pong: 'ok' }));
    const { delays, sleep } = recordingSleep();
    const client = makeClient(service, { sleep, retry: { maxRetryAfterMs: 1000 } });
    const err = await rejectionOf(client.ping());
    expect(err).toBeInstanceOf(SvcApiError);
    expect(err).toMatchObject({ code: 40001, httpStatus: 429, retryAfterMs: 2000, requestId: 'req_rl' });
    expect(delays).toEqual([]);
    expect(service.requests).toHaveLength(1);
  });

  it('retry: 40001 retry_after "2m" exceeds the default 60 s cap and is handed back', async () => {
    const service = await startFakeService();
    service.script(apiError(40001, 429, { retry_after: '2m' }));
    const { delays, sleep } = recordingSleep();
    const err = await rejectionOf(makeClient(service, { sleep }).getCheckoutIntent(INTENT_ID));
    expect(err).toMatchObject({ code: 40001, retryAfterMs: 120_000 });
    expect(delays).toEqual([]);
    expect(service.requests).toHaveLength(1);
  });

  it('retry: 40001 without retry_after falls back to jittered backoff', async () => {
    const service = await startFakeService();
    service.script(apiError(40001, 429, {}), apiError(40001, 429, {}), ok({ pong: 'ok' }));
    const { delays, sleep } = recordingSleep();
    const client = makeClient(service, { sleep, random: sequence(0.5, 0.75), retry: backoff });
    await client.ping();
    expect(delays).toEqual([50, 150]);
    expectFullJitter(delays, backoff);
    expect(service.requests).toHaveLength(3);
  });

  it('retry: 40001 "300ms" with the real sleep: the second request arrives at least 300 ms after the first', async () => {
    const service = await startFakeService();
    service.script(apiError(40001, 429, { retry_after: '300ms' }), ok({ pong: 'ok' }));
    await makeClient(service, { sleep: undefined }).ping();
    const [first, second] = service.requests;
    expect(second).toBeDefined();
    expect((second?.arrivedAt ?? 0) - (first?.arrivedAt ?? 0)).toBeGreaterThanOrEqual(300);
  });

  it('retry: a retry is re-signed with a fresh nonce and a fresh timestamp', async () => {
    const service = await startFakeService();
    service.script(apiError(40001, 429, { retry_after: '2s' }), ok({ your_request_body: { a: 1 } }));
    const clock = createManualClock(new Date(Math.floor(Date.now() / 1000) * 1000));
    const { sleep } = recordingSleep((ms) => clock.advance(ms));
    await makeClient(service, { clock, sleep }).echo({ a: 1 });
    const [first, second] = service.requests;
    expect(first?.nonce).not.toBe(second?.nonce);
    expect(Number(second?.timestamp) - Number(first?.timestamp)).toBe(2);
    expect(first?.headers['x-signature']).not.toBe(second?.headers['x-signature']);
    expect(second?.rawBody.equals(first?.rawBody ?? Buffer.alloc(0))).toBe(true);
    // Both attempts pass the server's own signature check (also enforced in afterEach).
    expect(service.requests.map((r) => r.signatureProblems)).toEqual([[], []]);
  });
});

type SafeCall = [name: string, call: (c: SvcClient) => Promise<unknown>, success: Reply];
const safeCalls: SafeCall[] = [
  ['ping (test route, GET)', (c) => c.ping(), ok({ pong: 'ok' })],
  ['echo (test route, POST)', (c) => c.echo({ n: 1 }), ok({ your_request_body: { n: 1 } })],
  ['getCheckoutIntent (GET)', (c) => c.getCheckoutIntent(INTENT_ID), ok(checkoutIntentPayload)],
  [
    'createClaimLinkAutoPayout',
    (c) => c.createClaimLinkAutoPayout(claimLinkRequest),
    ok(claimLinkResultPayload),
  ],
  ['cancelClaimLinkAutoPayout', (c) => c.cancelClaimLinkAutoPayout(CLAIM_LINK_ID), ok(cancelResultPayload)],
];
const failures: Array<[name: string, reply: () => Reply]> = [
  ['90000 HTTP 500', () => apiError(90000, 500, {}, { message: 'internal server error' })],
  ['99999 HTTP 500', () => apiError(99999, 500, {}, { message: 'unknown error' })],
  ['socket destroyed', destroy],
];

describe('retry: safe calls after server and network failures', () => {
  const cases = safeCalls.flatMap(([callName, call, success]) =>
    failures.map(([failName, failure]) => ({ callName, call, success, failName, failure })),
  );

  it.each(cases)(
    'retry: $callName is retried after $failName with full-jitter exponential backoff',
    async ({ call, success, failure }) => {
      const service = await startFakeService();
      service.script(failure(), failure(), success);
      const { delays, sleep } = recordingSleep();
      const client = makeClient(service, { sleep, random: sequence(0.5, 1), retry: backoff });
      await call(client);
      expect(service.requests).toHaveLength(3);
      expect(delays).toEqual([50, 200]);
      expectFullJitter(delays, backoff);
      const [first, ...rest] = service.requests;
      for (const r of rest) {
        expect(r.rawBody.equals(first?.rawBody ?? Buffer.alloc(1))).toBe(true);
        expect(r.path).toBe(first?.path);
      }
      expect(new Set(service.requests.map((r) => r.nonce)).size).toBe(3);
    },
  );

  it('retry: 90000 is retried up to retry.maxAttempts, delays capped by maxDelayMs, then surfaces', async () => {
    const service = await startFakeService();
    service.handler = () => apiError(90000, 500, {}, { requestId: 'req_last' });
    const settings = { baseDelayMs: 100, maxDelayMs: 300, maxAttempts: 4 };
    const { delays, sleep } = recordingSleep();
    const err = await rejectionOf(makeClient(service, { sleep, random: () => 1, retry: settings }).ping());
    expect(err).toBeInstanceOf(SvcApiError);
    expect(err).toMatchObject({ code: 90000, httpStatus: 500, retryable: true, requestId: 'req_last' });
    expect(service.requests).toHaveLength(4);
    expect(delays).toEqual([100, 200, 300]);
    expectFullJitter(delays, settings);
  });

  it('retry: a destroyed socket on every attempt surfaces SvcTransportError after maxAttempts', async () => {
    const service = await startFakeService();
    service.handler = destroy;
    const { delays, sleep } = recordingSleep();
    const client = makeClient(service, {
      sleep,
      random: sequence(0.1, 0.2),
      retry: { ...backoff, maxAttempts: 3 },
    });
    const err = await rejectionOf(client.getCheckoutIntentStatus(INTENT_ID));
    expect(err).toBeInstanceOf(SvcTransportError);
    expect((err as SvcTransportError).reachedService).toBe(true);
    expect(service.requests).toHaveLength(3);
    expect(delays).toEqual([10, 40]);
    expectFullJitter(delays, backoff);
  });

  it('retry: ECONNREFUSED (closed port) is retried up to maxAttempts with jittered backoff', async () => {
    const port = await closedPort();
    const { delays, sleep } = recordingSleep();
    const client = makeClient(
      { url: `http://127.0.0.1:${port}` },
      { sleep, random: sequence(0.5, 0.5, 0.5, 0.5), retry: backoff },
    );
    const err = await rejectionOf(client.ping());
    expect(err).toBeInstanceOf(SvcTransportError);
    expect((err as SvcTransportError).reachedService).toBe(false);
    expect(err.message).toContain('ECONNREFUSED');
    expect(delays).toEqual([50, 100, 200, 400]);
    expectFullJitter(delays, backoff);
  });

  it('retry: ECONNREFUSED then a server on that port: the retry succeeds', async () => {
    const port = await closedPort();
    let service: Awaited<ReturnType<typeof startFakeService>> | undefined;
    const { delays, sleep } = recordingSleep(async () => {
      service ??= await startFakeService({ port });
      service.script(
        ok({
          claim_link_id: CLAIM_LINK_ID,
          reference_id: null,
          status: 'cancelled',
          refund_status: 'refund_pending',
        }),
      );
    });
    const client = makeClient(
      { url: `http://127.0.0.1:${port}` },
      { sleep, random: () => 0.5, retry: backoff },
    );
    await expect(client.cancelClaimLinkAutoPayout(CLAIM_LINK_ID)).resolves.toMatchObject({
      already_cancelled: false,
    });
    expect(delays).toEqual([50]);
    expect(service?.requests).toHaveLength(1);
  });

  it('retry: a GET timeout is retried like a network error', async () => {
    const service = await startFakeService();
    service.script(hang(), ok({ pong: 'ok' }));
    const { delays, sleep } = recordingSleep();
    const client = makeClient(service, {
      sleep,
      random: () => 0.5,
      retry: backoff,
      timeouts: { defaultMs: 150 },
    });
    await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(service.requests).toHaveLength(2);
    expect(delays).toEqual([50]);
  });

  it('retry: a non-JSON 503 from a proxy on a GET is retried', async () => {
    const service = await startFakeService();
    service.script({ kind: 'raw', status: 503, contentType: 'text/html', body: '<h1>busy</h1>' }, ok(1));
    const { delays, sleep } = recordingSleep();
    const client = makeClient(service, { sleep, random: () => 0.5, retry: backoff });
    await expect(client.getCheckoutIntentStatus(INTENT_ID)).resolves.toBe(1);
    expect(service.requests).toHaveLength(2);
    expect(delays).toEqual([50]);
  });

  it.each([
    [10001, 400],
    [20002, 401],
    [30001, 403],
    [50001, 404],
  ])('retry: %i (HTTP %i) on a safe GET is not retried', async (code, status) => {
    const service = await startFakeService();
    service.script(apiError(code, status, { reason: 'x' }), ok(checkoutIntentPayload));
    const { delays, sleep } = recordingSleep();
    const err = await rejectionOf(makeClient(service, { sleep }).getCheckoutIntent(INTENT_ID));
    expect(err).toMatchObject({ code, httpStatus: status, retryable: false });
    expect(service.requests).toHaveLength(1);
    expect(delays).toEqual([]);
  });
});

describe('secrets', () => {
  it('secrets: the api secret appears in no error thrown in this file', () => {
    const texts = collectedErrorTexts();
    expect(texts.length).toBeGreaterThan(0);
    for (const text of texts) expect(text).not.toContain(API_SECRET);
  });
});
