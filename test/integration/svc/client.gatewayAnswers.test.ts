/**
 * Answers that are not the service's but come from something in front of it (a CDN, a gateway, a
 * proxy): a 429 page is a rate limit, read like a 40001 (retried, the key paused for Retry-After,
 * 1 s without it); an unsigned 5xx or 429 for a store with signed responses is a retryable
 * failure, not a signature error. Over real HTTP, against the fake service.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { retryAfterHeaderMs } from '../../../src/svc/client.ts';
import {
  DEFAULT_RATE_LIMIT_WAIT_MS,
  ResponseSignatureError,
  rateLimitWaitMs,
  SvcKeyPausedError,
  SvcProtocolError,
  SvcRateLimitError,
  UnknownOutcomeError,
} from '../../../src/svc/errors.ts';
import {
  API_SECRET,
  apiError,
  collectedErrorTexts,
  createIntentResultPayload,
  INTENT_ID,
  makeClient,
  ok,
  type Reply,
  recordingSleep,
  rejectionOf,
  startFakeService,
  stopFakeServices,
} from './fakeService.ts';

afterEach(stopFakeServices);

const retry = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000, maxRetryAfterMs: 60_000 };

function gateway429(headers: Record<string, string> = {}): Reply {
  return {
    kind: 'raw',
    status: 429,
    contentType: 'text/html',
    body: '<html><body><h1>429 Too Many Requests</h1></body></html>',
    headers,
  };
}
const badGateway: Reply = {
  kind: 'raw',
  status: 502,
  contentType: 'text/html',
  body: '<h1>502 Bad Gateway</h1>',
};

/** A key pause kept in memory, with a clock the test moves. */
function memoryKeyPause() {
  const state = { now: 1_000, pausedUntil: 0, starts: [] as number[] };
  return {
    state,
    keyPause: {
      remainingMs: async () => Math.max(0, state.pausedUntil - state.now),
      start: async (ms: number) => {
        state.starts.push(ms);
        state.pausedUntil = Math.max(state.pausedUntil, state.now + ms);
      },
    },
  };
}

describe('gateway 429: a rate limit like 40001', () => {
  it('retry: a 429 text/html with Retry-After: 2 is waited out (2000 ms), then the call succeeds', async () => {
    const service = await startFakeService();
    service.script(gateway429({ 'Retry-After': '2' }), ok({ pong: 'ok' }));
    const { delays, sleep } = recordingSleep();
    await expect(makeClient(service, { sleep, retry }).ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(delays).toEqual([2000]);
    expect(service.requests).toHaveLength(2);
  });

  it('retry: a 429 without Retry-After backs off (as a 40001 without retry_after)', async () => {
    const service = await startFakeService();
    service.script(gateway429(), ok(10));
    const { delays, sleep } = recordingSleep();
    const client = makeClient(service, { sleep, retry, random: () => 0.5 });
    await expect(client.getCheckoutIntentStatus(INTENT_ID)).resolves.toBe(10);
    expect(delays).toEqual([50]);
  });

  it("retry: a 429 JSON body that is not an envelope (a gateway's) is a rate limit too", async () => {
    const service = await startFakeService();
    service.script(
      { kind: 'raw', status: 429, contentType: 'application/json', body: '{"message":"Too Many Requests"}' },
      ok({ pong: 'ok' }),
    );
    const { delays, sleep } = recordingSleep();
    await expect(makeClient(service, { sleep, retry, random: () => 1 }).ping()).resolves.toMatchObject({
      pong: 'ok',
    });
    expect(delays).toEqual([100]);
  });

  it("key pause: a 429 page starts the key's pause for Retry-After and is handed to the caller (daemon settings); nothing is sent during the pause", async () => {
    const service = await startFakeService();
    service.script(gateway429({ 'Retry-After': '3' }), ok({ pong: 'ok' }));
    const { state, keyPause } = memoryKeyPause();
    const client = makeClient(service, { retry: { maxAttempts: 3, maxRetryAfterMs: 0 }, keyPause });
    const refused = await rejectionOf(client.ping());
    expect(refused).toBeInstanceOf(SvcRateLimitError);
    expect(refused).toMatchObject({ retryable: true, retryAfterMs: 3000, httpStatus: 429 });
    expect(rateLimitWaitMs(refused)).toBe(3000);
    expect(state.starts).toEqual([3000]);
    state.now += 1_000;
    const paused = await rejectionOf(client.ping());
    expect(paused).toBeInstanceOf(SvcKeyPausedError);
    expect(service.requests).toHaveLength(1);
    state.now += 2_000;
    await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(service.requests).toHaveLength(2);
  });

  it('key pause: a 429 page without Retry-After pauses the key for the 1 s default', async () => {
    const service = await startFakeService();
    service.script(gateway429(), gateway429());
    const { state, keyPause } = memoryKeyPause();
    const client = makeClient(service, { retry: { maxAttempts: 3, maxRetryAfterMs: 0 }, keyPause });
    // Backoff first; the next attempt finds the key paused and is not sent.
    const err = await rejectionOf(client.ping());
    expect(err).toBeInstanceOf(SvcKeyPausedError);
    expect(state.starts).toEqual([DEFAULT_RATE_LIMIT_WAIT_MS]);
    expect(rateLimitWaitMs(err)).toBe(DEFAULT_RATE_LIMIT_WAIT_MS);
    expect(service.requests).toHaveLength(1);
  });

  it('retry: a 40001 without details.retry_after reads the HTTP Retry-After header', async () => {
    const service = await startFakeService();
    service.script(
      {
        kind: 'raw',
        status: 429,
        contentType: 'application/json',
        body: JSON.stringify({
          code: 40001,
          payload: null,
          error: { message: 'slow down', details: {} },
          request_id: 'r1',
        }),
        headers: { 'Retry-After': '4' },
      },
      ok({ pong: 'ok' }),
    );
    const { delays, sleep } = recordingSleep();
    await makeClient(service, { sleep, retry }).ping();
    expect(delays).toEqual([4000]);
  });

  it('createCheckoutIntent: a gateway 429 is retried (the service did not act), not an unknown outcome', async () => {
    const service = await startFakeService();
    service.script(gateway429({ 'Retry-After': '1' }), ok(createIntentResultPayload));
    const { delays, sleep } = recordingSleep();
    const result = await makeClient(service, { sleep, retry }).createCheckoutIntent({
      stable_coin: 1,
      amount_cents: 2500n,
    });
    expect(result.allsvc_checkout_intent_id).toBe(createIntentResultPayload.allsvc_checkout_intent_id);
    expect(delays).toEqual([1000]);
    expect(service.requests).toHaveLength(2);
    expect(service.requests[1]?.rawBody.equals(service.requests[0]?.rawBody ?? Buffer.alloc(0))).toBe(true);
  });
});

describe('gateway answers for a store with signed responses', () => {
  async function signed() {
    const service = await startFakeService({ signResponses: true });
    const { delays, sleep } = recordingSleep();
    const client = makeClient(service, { signedResponse: true, sleep, retry, random: () => 0.5 });
    return { service, client, delays };
  }

  it("response signing: an unsigned 502 page (a proxy's) is retried, not a signature error", async () => {
    const { service, client, delays } = await signed();
    service.script(badGateway, ok(20));
    await expect(client.getCheckoutIntentStatus(INTENT_ID)).resolves.toBe(20);
    expect(service.requests).toHaveLength(2);
    expect(delays).toEqual([50]);
  });

  it('response signing: an unsigned 502 on every attempt surfaces a retryable SvcProtocolError', async () => {
    const { service, client } = await signed();
    service.handler = () => badGateway;
    const err = await rejectionOf(client.ping());
    expect(err).toBeInstanceOf(SvcProtocolError);
    expect(err).toMatchObject({ httpStatus: 502, retryable: true });
    expect(err.message).not.toMatch(/api_secret/);
    expect(service.requests).toHaveLength(5);
  });

  it('response signing: an unsigned 429 page is a rate limit (Retry-After honoured)', async () => {
    const { service, client, delays } = await signed();
    service.script(gateway429({ 'Retry-After': '2' }), ok({ pong: 'ok' }));
    await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(delays).toEqual([2000]);
  });

  it('response signing: an unsigned 500 carrying a 90000 envelope is retried; its body is not trusted', async () => {
    const { service, client, delays } = await signed();
    service.script(apiError(90000, 500, {}, { signing: { omit: true } }), ok({ pong: 'ok' }));
    await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(service.requests).toHaveLength(2);
    expect(delays).toHaveLength(1);
  });

  it('response signing: an unsigned 429 carrying a 40001 envelope is not trusted for its retry_after', async () => {
    const { service, client, delays } = await signed();
    service.script(
      apiError(40001, 429, { retry_after: '30s' }, { signing: { omit: true } }),
      ok({ pong: 'ok' }),
    );
    await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(delays).toEqual([50]);
  });

  it('response signing: a 500 with a bad signature is still a ResponseSignatureError, not retried', async () => {
    const { service, client, delays } = await signed();
    service.script(apiError(90000, 500, {}, { signing: { tamperBody: true } }), ok({ pong: 'ok' }));
    const err = await rejectionOf(client.ping());
    expect(err).toBeInstanceOf(ResponseSignatureError);
    expect(service.requests).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('response signing: an unsigned 200 or 400 is still a ResponseSignatureError', async () => {
    const { service, client } = await signed();
    service.script(ok({ pong: 'ok' }, { signing: { omit: true } }), {
      kind: 'raw',
      status: 400,
      contentType: 'text/html',
      body: '<h1>400</h1>',
    });
    expect(await rejectionOf(client.ping())).toBeInstanceOf(ResponseSignatureError);
    expect(await rejectionOf(client.ping())).toBeInstanceOf(ResponseSignatureError);
    expect(service.requests).toHaveLength(2);
  });

  it('createCheckoutIntent: an unsigned 502 is an unknown outcome (it may have acted), caused by a retryable failure, not a signature error', async () => {
    const { service, client } = await signed();
    service.script(badGateway, ok(createIntentResultPayload));
    const err = await rejectionOf(client.createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n }));
    expect(err).toBeInstanceOf(UnknownOutcomeError);
    expect(err.cause).toBeInstanceOf(SvcProtocolError);
    expect((err as UnknownOutcomeError).known.lastHttpStatus).toBe(502);
    expect(service.requests).toHaveLength(1);
  });
});

describe('Retry-After header', () => {
  const now = new Date('2026-03-01T12:00:00Z');
  it.each([
    ['delay-seconds', { 'retry-after': '7' }, 7000],
    [
      "HTTP date, from the answer's Date",
      { 'retry-after': 'Sun, 01 Mar 2026 09:00:05 GMT', date: 'Sun, 01 Mar 2026 09:00:00 GMT' },
      5000,
    ],
    ['HTTP date, from now without Date', { 'retry-after': 'Sun, 01 Mar 2026 12:00:03 GMT' }, 3000],
    ['HTTP date already past', { 'retry-after': 'Sun, 01 Mar 2026 11:00:00 GMT' }, 0],
    ['absent', {}, undefined],
    ['unreadable', { 'retry-after': 'soon' }, undefined],
    ['not a date, not an integer', { 'retry-after': '2.5' }, undefined],
  ] as Array<[string, Record<string, string>, number | undefined]>)(
    'retry-after header: %s',
    (_case, headers, ms) => {
      expect(retryAfterHeaderMs(headers, now)).toBe(ms);
    },
  );
});

describe('secrets', () => {
  it('secrets: the api secret appears in no error thrown in this file', () => {
    const texts = collectedErrorTexts();
    expect(texts.length).toBeGreaterThan(0);
    for (const text of texts) expect(text).not.toContain(API_SECRET);
  });
});
