/**
 * createCheckoutIntent has no idempotency key, so once the service may have acted the client must
 * not send it again: it throws UnknownOutcomeError and the server sees exactly one request. It is
 * repeated only when the service provably did not act (40001, or a connection never made).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CreateCheckoutIntentInput } from '../../../src/svc/client.ts';
import {
  ResponseSignatureError,
  SvcApiError,
  SvcProtocolError,
  SvcTransportError,
  UnknownOutcomeError,
} from '../../../src/svc/errors.ts';
import {
  API_SECRET,
  apiError,
  closedPort,
  collectedErrorTexts,
  createIntentResultPayload,
  destroy,
  type FakeService,
  hang,
  makeClient,
  ok,
  type Reply,
  recordingSleep,
  rejectionOf,
  startFakeService,
  stopFakeServices,
} from './fakeService.ts';

afterEach(stopFakeServices);

const request: CreateCheckoutIntentInput = {
  currency: 44,
  amount_cents: 4250n,
  order_id: 'order-7731',
  redirect_url: 'https://shop.example.test/thanks',
};
const retry = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000 };

async function expectUnknownOutcome(service: FakeService, err: Error) {
  expect(err).toBeInstanceOf(UnknownOutcomeError);
  const unknown = err as UnknownOutcomeError;
  expect(unknown.retryable).toBe(false);
  expect(unknown.known.orderId).toBe('order-7731');
  expect(unknown.known.attempts).toBe(1);
  expect(unknown.message).toContain('order-7731');
  expect(service.requests).toHaveLength(1);
  return unknown;
}

describe('createCheckoutIntent: outcome unknown -> no second request', () => {
  it.each([
    [90000, 'internal server error'],
    [99999, 'unknown error'],
  ])(
    'createCheckoutIntent: after %i HTTP 500 throws UnknownOutcomeError, server saw ONE request',
    async (code, message) => {
      const service = await startFakeService();
      service.script(
        apiError(code, 500, {}, { message, requestId: 'req_500' }),
        ok(createIntentResultPayload),
      );
      const { delays, sleep } = recordingSleep();
      const err = await rejectionOf(makeClient(service, { sleep, retry }).createCheckoutIntent(request));
      const unknown = await expectUnknownOutcome(service, err);
      expect(unknown.known.lastHttpStatus).toBe(500);
      expect(unknown.known.requestId).toBe('req_500');
      expect(unknown.cause).toBeInstanceOf(SvcApiError);
      expect(delays).toEqual([]);
    },
  );

  it('createCheckoutIntent: a socket destroyed after the request was received -> UnknownOutcomeError, ONE request', async () => {
    const service = await startFakeService();
    service.script(destroy(), ok(createIntentResultPayload));
    const err = await rejectionOf(makeClient(service, { retry }).createCheckoutIntent(request));
    const unknown = await expectUnknownOutcome(service, err);
    expect(unknown.cause).toBeInstanceOf(SvcTransportError);
    expect((unknown.cause as SvcTransportError).reachedService).toBe(true);
    expect(unknown.known.lastHttpStatus).toBeUndefined();
  });

  it('createCheckoutIntent: a timeout (server never answers) -> UnknownOutcomeError, ONE request', async () => {
    const service = await startFakeService();
    service.script(hang(), ok(createIntentResultPayload));
    const client = makeClient(service, { retry, timeouts: { defaultMs: 200 } });
    const started = performance.now();
    const err = await rejectionOf(client.createCheckoutIntent(request));
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    const unknown = await expectUnknownOutcome(service, err);
    expect(unknown.cause).toBeInstanceOf(SvcTransportError);
    expect((unknown.cause as Error).message).toContain('no response within 200 ms');
  });

  it('createCheckoutIntent: a bad response signature -> UnknownOutcomeError, ONE request', async () => {
    const service = await startFakeService({ signResponses: true });
    service.script(
      ok(createIntentResultPayload, { signing: { tamperBody: true } }),
      ok(createIntentResultPayload),
    );
    const err = await rejectionOf(
      makeClient(service, { retry, signedResponse: true }).createCheckoutIntent(request),
    );
    const unknown = await expectUnknownOutcome(service, err);
    expect(unknown.cause).toBeInstanceOf(ResponseSignatureError);
  });

  it('createCheckoutIntent: a non-JSON 502 from a proxy -> UnknownOutcomeError, ONE request', async () => {
    const service = await startFakeService();
    service.script(
      { kind: 'raw', status: 502, contentType: 'text/html', body: '<html>bad gateway</html>' },
      ok(createIntentResultPayload),
    );
    const err = await rejectionOf(makeClient(service, { retry }).createCheckoutIntent(request));
    const unknown = await expectUnknownOutcome(service, err);
    expect(unknown.cause).toBeInstanceOf(SvcProtocolError);
    expect(unknown.known.lastHttpStatus).toBe(502);
  });
});

describe('createCheckoutIntent: the service provably did not act -> retried', () => {
  it('createCheckoutIntent: 40001 is retried (same body bytes, fresh nonce) and succeeds', async () => {
    const service = await startFakeService();
    service.script(apiError(40001, 429, { retry_after: '1s' }), ok(createIntentResultPayload));
    const { delays, sleep } = recordingSleep();
    const result = await makeClient(service, { sleep, retry }).createCheckoutIntent(request);
    expect(result.allsvc_checkout_intent_id).toBe(createIntentResultPayload.allsvc_checkout_intent_id);
    expect(delays).toEqual([1000]);
    const [first, second] = service.requests;
    expect(service.requests).toHaveLength(2);
    expect(second?.rawBody.equals(first?.rawBody ?? Buffer.alloc(0))).toBe(true);
    expect(second?.nonce).not.toBe(first?.nonce);
  });

  it('createCheckoutIntent: 40001 without retry_after is retried after a backoff delay', async () => {
    const service = await startFakeService();
    service.script(apiError(40001, 429), ok(createIntentResultPayload));
    const { delays, sleep } = recordingSleep();
    await makeClient(service, { sleep, retry, random: () => 0.5 }).createCheckoutIntent(request);
    expect(delays).toEqual([50]);
    expect(service.requests).toHaveLength(2);
  });

  it('createCheckoutIntent: ECONNREFUSED (closed port) is retried; the retry reaches a server and succeeds', async () => {
    const port = await closedPort();
    let service: FakeService | undefined;
    const { delays, sleep } = recordingSleep(async () => {
      service ??= await startFakeService({ port });
      service.script(ok(createIntentResultPayload));
    });
    const client = makeClient({ url: `http://127.0.0.1:${port}` }, { sleep, retry, random: () => 1 });
    await expect(client.createCheckoutIntent(request)).resolves.toMatchObject({ amount_coins: '19.99' });
    expect(delays).toEqual([100]);
    expect(service?.requests).toHaveLength(1);
  });

  it('createCheckoutIntent: ECONNREFUSED on every attempt surfaces SvcTransportError (not UnknownOutcomeError)', async () => {
    const port = await closedPort();
    const { delays, sleep } = recordingSleep();
    const err = await rejectionOf(
      makeClient(
        { url: `http://127.0.0.1:${port}` },
        { sleep, retry: { ...retry, maxAttempts: 3 } },
      ).createCheckoutIntent(request),
    );
    expect(err).toBeInstanceOf(SvcTransportError);
    expect((err as SvcTransportError).reachedService).toBe(false);
    expect(delays).toHaveLength(2);
  });
});

describe('createCheckoutIntent: definite failures surface as SvcApiError without retry', () => {
  const cases: Array<[string, Reply, number, number]> = [
    ['10001', apiError(10001, 400, { field: 'amount_cents' }, { message: 'Validation error' }), 10001, 400],
    [
      '50002',
      apiError(50002, 200, {}, { message: 'amount must be greater than 0.1 USDT', requestId: 'req_min' }),
      50002,
      200,
    ],
  ];
  it.each(cases)(
    'createCheckoutIntent: %s surfaces as SvcApiError, not retried',
    async (_n, reply, code, status) => {
      const service = await startFakeService();
      service.script(reply, ok(createIntentResultPayload));
      const { delays, sleep } = recordingSleep();
      const err = await rejectionOf(makeClient(service, { sleep, retry }).createCheckoutIntent(request));
      expect(err).toBeInstanceOf(SvcApiError);
      expect(err).toMatchObject({ code, httpStatus: status, retryable: false });
      expect(service.requests).toHaveLength(1);
      expect(delays).toEqual([]);
    },
  );

  it('createCheckoutIntent: 50002 keeps the service message and request_id', async () => {
    const service = await startFakeService();
    service.script(
      apiError(50002, 400, {}, { message: 'amount must be greater than 0.1 USDC', requestId: 'req_q' }),
    );
    const err = await rejectionOf(
      makeClient(service).createCheckoutIntent({
        stable_coin: 2,
        amount_cents: 10n,
        accepted_stable_coins: [2],
      }),
    );
    expect(err.message).toContain('amount must be greater than 0.1 USDC');
    expect(err).toMatchObject({ code: 50002, requestId: 'req_q', details: {} });
  });
});

describe('secrets', () => {
  it('secrets: the api secret appears in no error thrown in this file', () => {
    const texts = collectedErrorTexts();
    expect(texts.length).toBeGreaterThan(0);
    for (const text of texts) expect(text).not.toContain(API_SECRET);
  });
});
