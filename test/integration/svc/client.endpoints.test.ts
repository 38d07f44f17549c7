/**
 * One test per endpoint method of the typed client, against a real HTTP server that checks every
 * request's signature on its own (fakeService.ts), plus the client-side input checks and the
 * fields a typed error carries.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SvcApiError, SvcInvalidRequestError } from '../../../src/svc/errors.ts';
import {
  API_SECRET,
  apiError,
  CLAIM_LINK_ID,
  checkoutIntentPayload,
  claimLinkRequest,
  claimLinkResultPayload,
  collectedErrorTexts,
  createIntentResultPayload,
  EMPTY_SHA256,
  expectSignedRequest,
  hmacV1,
  INTENT_ID,
  makeClient,
  ok,
  rejectionOf,
  sha256Hex,
  startFakeService,
  stopFakeServices,
} from './fakeService.ts';

afterEach(stopFakeServices);

describe('svc client endpoints (real HTTP, independently verified signatures)', () => {
  it('ping: GET /v1/test/ping, signed with all four headers over the empty body, returns pong', async () => {
    const service = await startFakeService();
    service.script(ok({ pong: 'ok' }));
    await expect(makeClient(service).ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(service.requests).toHaveLength(1);
    expectSignedRequest(service.requests[0], { method: 'GET', path: '/v1/test/ping', body: '' });
    expect(sha256Hex(service.requests[0]?.rawBody ?? Buffer.alloc(1))).toBe(EMPTY_SHA256);
    expect(service.requests[0]?.headers['x-signature']).toMatch(/^v1=[A-Za-z0-9+/]{43}=$/);
  });

  it('signing: every request carries a fresh nonce and its own signature', async () => {
    const service = await startFakeService();
    service.script(ok({ pong: 'ok' }), ok({ pong: 'ok' }), ok({ pong: 'ok' }));
    const client = makeClient(service);
    for (let i = 0; i < 3; i++) await client.ping();
    const nonces = service.requests.map((r) => r.nonce);
    expect(new Set(nonces).size).toBe(3);
    expect(new Set(service.requests.map((r) => r.headers['x-signature'])).size).toBe(3);
    for (const r of service.requests)
      expectSignedRequest(r, { method: 'GET', path: '/v1/test/ping', body: '' });
  });

  it('signing: with a base URL that has a path prefix, the full path as sent is signed', async () => {
    const service = await startFakeService();
    service.script(ok({ pong: 'ok' }));
    await makeClient({ url: `${service.url}/merchant-api` }).ping();
    expectSignedRequest(service.requests[0], { method: 'GET', path: '/merchant-api/v1/test/ping', body: '' });
  });

  it('fail: rejects SvcApiError 10001 HTTP 400 and is not retried', async () => {
    const service = await startFakeService();
    service.script(apiError(10001, 400, {}, { message: 'Validation error', requestId: 'req_fail_1' }));
    const err = await rejectionOf(makeClient(service, { retry: { maxAttempts: 5 } }).fail());
    expect(err).toBeInstanceOf(SvcApiError);
    expect(err).toMatchObject({ code: 10001, httpStatus: 400, details: {}, retryable: false });
    expect(err.message).toContain('Validation error');
    expect(service.requests).toHaveLength(1);
    expectSignedRequest(service.requests[0], { method: 'GET', path: '/v1/test/fail', body: '' });
  });

  it('echo: an object body is sent as compact JSON and hashed over those bytes', async () => {
    const service = await startFakeService();
    const body = { order: 'A-1', amount: '12.50', note: 'café ☕', nested: { list: [1, 2] } };
    service.script(ok({ your_request_body: body }));
    await expect(makeClient(service).echo(body)).resolves.toEqual({ your_request_body: body });
    expectSignedRequest(service.requests[0], {
      method: 'POST',
      path: '/v1/test/post',
      body: JSON.stringify(body),
    });
    expect(service.requests[0]?.headers['content-type']).toBe('application/json');
  });

  it('echo: rawBody bytes arrive exactly as given and the body hash covers those exact bytes', async () => {
    const service = await startFakeService();
    // Spacing, key order, a unicode escape and a literal non-ASCII character: all must survive as is.
    const raw = '{ "b" : 2,\n  "a":"\\u00e9 é",  "z": [ 1 , 2 ] }';
    service.script(ok({ your_request_body: JSON.parse(raw) }));
    await makeClient(service).echo({ rawBody: raw });
    const req = service.requests[0];
    expectSignedRequest(req, { method: 'POST', path: '/v1/test/post', body: raw });
    expect(req?.rawBody.toString('utf8')).toBe(raw);
    // The signature would not match a hash of the re-serialised body: the test can tell the difference.
    const reserialised = JSON.stringify(JSON.parse(raw));
    const wrong = ['POST', '/v1/test/post', '', req?.timestamp, req?.nonce, sha256Hex(reserialised)].join(
      '\n',
    );
    expect(req?.headers['x-signature']).not.toBe(hmacV1(wrong));
  });

  it('createCheckoutIntent: POST /v1/checkout_intents/ with amount_cents a bare JSON integer from a bigint', async () => {
    const service = await startFakeService();
    service.script(ok(createIntentResultPayload));
    const result = await makeClient(service).createCheckoutIntent({
      currency: 1,
      amount_cents: 1999n,
      order_id: 'order-1001',
      accepted_stable_coins: [2],
    });
    expect(result).toEqual(createIntentResultPayload);
    const req = service.requests[0];
    const text = req?.rawBody.toString('utf8') ?? '';
    expect(text).toContain('"amount_cents":1999');
    expect(text).not.toMatch(/"amount_cents":"/);
    expect(JSON.parse(text)).toEqual({
      currency: 1,
      amount_cents: 1999,
      order_id: 'order-1001',
      accepted_stable_coins: [2],
    });
    expectSignedRequest(req, { method: 'POST', path: '/v1/checkout_intents/', body: text });
    expect(req?.headers['content-type']).toBe('application/json');
  });

  it('createCheckoutIntent: the largest exact amount_cents (2^53 - 1) travels digit for digit', async () => {
    const service = await startFakeService();
    service.script(ok(createIntentResultPayload));
    await makeClient(service).createCheckoutIntent({ stable_coin: 1, amount_cents: 9007199254740991n });
    expect(service.requests[0]?.rawBody.toString('utf8')).toBe(
      '{"stable_coin":1,"amount_cents":9007199254740991}',
    );
  });

  it('getCheckoutIntent: GET the intent; absent error_message and tx_hash_2 read as null', async () => {
    const service = await startFakeService();
    expect(checkoutIntentPayload).not.toHaveProperty('error_message');
    expect(checkoutIntentPayload).not.toHaveProperty('tx_hash_2');
    service.script(ok(checkoutIntentPayload));
    const intent = await makeClient(service).getCheckoutIntent(INTENT_ID);
    expect(intent.error_message).toBeNull();
    expect(intent.tx_hash_2).toBeNull();
    expect(intent.amount_cents).toBe(1999n);
    expect(intent).toMatchObject({ all_svc_checkout_intent_id: INTENT_ID, status: 20, coin_symbol: 'USDC' });
    expectSignedRequest(service.requests[0], {
      method: 'GET',
      path: `/v1/checkout_intents/${INTENT_ID}`,
      body: '',
    });
  });

  it('getCheckoutIntentStatus: GET .../status answers a bare integer payload', async () => {
    const service = await startFakeService();
    service.script(ok(10));
    await expect(makeClient(service).getCheckoutIntentStatus(INTENT_ID)).resolves.toBe(10);
    expectSignedRequest(service.requests[0], {
      method: 'GET',
      path: `/v1/checkout_intents/${INTENT_ID}/status`,
      body: '',
    });
  });

  it('getCheckoutIntent: an id is sent as one percent-encoded path segment and signed as sent', async () => {
    const service = await startFakeService();
    service.script(ok(-4));
    await makeClient(service).getCheckoutIntentStatus('a/b c');
    expectSignedRequest(service.requests[0], {
      method: 'GET',
      path: '/v1/checkout_intents/a%2Fb%20c/status',
      body: '',
    });
  });

  it('createClaimLinkAutoPayout: POST /v1/claim_link_auto_payouts with amount as a string and the reference_id', async () => {
    const service = await startFakeService();
    service.script(ok(claimLinkResultPayload));
    const result = await makeClient(service).createClaimLinkAutoPayout(claimLinkRequest);
    expect(result).toEqual(claimLinkResultPayload);
    const req = service.requests[0];
    const text = req?.rawBody.toString('utf8') ?? '';
    expect(JSON.parse(text)).toEqual(claimLinkRequest);
    expect(text).toContain('"amount":"25.50"');
    expectSignedRequest(req, { method: 'POST', path: '/v1/claim_link_auto_payouts', body: text });
  });

  it('cancelClaimLinkAutoPayout: POST .../{id}/cancel with an empty body (hash of "") resolves already_cancelled false', async () => {
    const service = await startFakeService();
    service.script(
      ok({
        claim_link_id: CLAIM_LINK_ID,
        reference_id: null,
        status: 'cancelled',
        refund_status: 'refund_pending',
      }),
    );
    await expect(makeClient(service).cancelClaimLinkAutoPayout(CLAIM_LINK_ID)).resolves.toEqual({
      claim_link_id: CLAIM_LINK_ID,
      reference_id: null,
      status: 'cancelled',
      refund_status: 'refund_pending',
      already_cancelled: false,
    });
    expectSignedRequest(service.requests[0], {
      method: 'POST',
      path: `/v1/claim_link_auto_payouts/${CLAIM_LINK_ID}/cancel`,
      body: '',
    });
  });
});

describe('svc client input checks (nothing is sent)', () => {
  it('invalid input: both currency and stable_coin -> SvcInvalidRequestError, server saw no request', async () => {
    const service = await startFakeService();
    const err = await rejectionOf(
      makeClient(service).createCheckoutIntent({ currency: 1, stable_coin: 1, amount_cents: 500n }),
    );
    expect(err).toBeInstanceOf(SvcInvalidRequestError);
    expect(err.message).toMatch(/exactly one of currency .* or stable_coin/);
    expect(service.requests).toHaveLength(0);
  });

  it('invalid input: neither currency nor stable_coin -> SvcInvalidRequestError, server saw no request', async () => {
    const service = await startFakeService();
    const err = await rejectionOf(makeClient(service).createCheckoutIntent({ amount_cents: 500n }));
    expect(err).toBeInstanceOf(SvcInvalidRequestError);
    expect(service.requests).toHaveLength(0);
  });

  it('invalid input: reference_id with a space -> SvcInvalidRequestError, server saw no request', async () => {
    const service = await startFakeService();
    const err = await rejectionOf(
      makeClient(service).createClaimLinkAutoPayout({ ...claimLinkRequest, reference_id: 'payout 1' }),
    );
    expect(err).toBeInstanceOf(SvcInvalidRequestError);
    expect((err as SvcInvalidRequestError).problems.join(' ')).toContain('reference_id');
    expect(service.requests).toHaveLength(0);
  });

  it('invalid input: methods reject their promise rather than throw synchronously', async () => {
    const service = await startFakeService();
    const client = makeClient(service);
    const calls: Array<() => Promise<unknown>> = [
      () => client.createCheckoutIntent({ currency: 1, stable_coin: 2, amount_cents: 1n }),
      () => client.createClaimLinkAutoPayout({ ...claimLinkRequest, reference_id: '' }),
      () => client.getCheckoutIntent(''),
      () => client.getCheckoutIntentStatus(''),
    ];
    for (const call of calls) {
      let pending: Promise<unknown> | undefined;
      expect(() => {
        pending = call();
      }).not.toThrow();
      expect(await rejectionOf(pending ?? Promise.resolve())).toBeInstanceOf(SvcInvalidRequestError);
    }
    expect(service.requests).toHaveLength(0);
  });

  it('invalid input: an empty id -> SvcInvalidRequestError, server saw no request', async () => {
    const service = await startFakeService();
    expect(await rejectionOf(makeClient(service).getCheckoutIntent(''))).toBeInstanceOf(
      SvcInvalidRequestError,
    );
    expect(service.requests).toHaveLength(0);
  });
});

describe('svc client typed errors', () => {
  it('typed errors: SvcApiError carries code, httpStatus, details and request_id', async () => {
    const service = await startFakeService();
    const details = { reason: 'ip_not_allowed', ip: '203.0.113.9' };
    service.script(apiError(30001, 403, details, { message: 'Forbidden', requestId: 'req_7c1e' }));
    const err = await rejectionOf(makeClient(service).getCheckoutIntent(INTENT_ID));
    expect(err).toBeInstanceOf(SvcApiError);
    const api = err as SvcApiError;
    expect(api.code).toBe(30001);
    expect(api.httpStatus).toBe(403);
    expect(api.details).toEqual(details);
    expect(api.requestId).toBe('req_7c1e');
    expect(api.endpoint).toBe('checkout_intents.get');
    expect(api.retryable).toBe(false);
    expect(api.message).toContain('req_7c1e');
    expect(service.requests).toHaveLength(1);
  });

  it('typed errors: 50001 (not found) on getCheckoutIntentStatus is surfaced, not retried', async () => {
    const service = await startFakeService();
    service.script(apiError(50001, 404, {}, { message: 'checkout intent not found', requestId: 'req_nf' }));
    const err = await rejectionOf(makeClient(service).getCheckoutIntentStatus(INTENT_ID));
    expect(err).toMatchObject({ code: 50001, httpStatus: 404, requestId: 'req_nf', details: {} });
    expect(service.requests).toHaveLength(1);
  });
});

describe('secrets', () => {
  it('secrets: the api secret appears in no error thrown in this file', () => {
    const texts = collectedErrorTexts();
    expect(texts.length).toBeGreaterThan(0);
    for (const text of texts) expect(text).not.toContain(API_SECRET);
  });
});
