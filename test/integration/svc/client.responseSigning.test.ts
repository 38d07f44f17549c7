/**
 * Stores with signed_response on: the fake service signs each response itself (seven-line canonical
 * string, node:crypto), and the client must accept exactly the correctly signed, fresh, unreplayed
 * responses, error envelopes included. A failed check is a ResponseSignatureError and is never retried.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ResponseSignatureError, SvcApiError } from '../../../src/svc/errors.ts';
import {
  API_SECRET,
  apiError,
  collectedErrorTexts,
  INTENT_ID,
  makeClient,
  ok,
  type ResponseSigning,
  recordingSleep,
  rejectionOf,
  startFakeService,
  stopFakeServices,
} from './fakeService.ts';

afterEach(stopFakeServices);

const retry = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000 };

async function signedSetup() {
  const service = await startFakeService({ signResponses: true });
  const { delays, sleep } = recordingSleep();
  const client = makeClient(service, { signedResponse: true, sleep, retry });
  return { service, client, delays };
}

async function expectSignatureError(call: Promise<unknown>, reason: RegExp): Promise<ResponseSignatureError> {
  const err = await rejectionOf(call);
  expect(err).toBeInstanceOf(ResponseSignatureError);
  const sig = err as ResponseSignatureError;
  expect(sig.retryable).toBe(false);
  expect(sig.reason).toMatch(reason);
  return sig;
}

describe('response signing: accepted', () => {
  it('response signing: a correctly signed response passes', async () => {
    const { service, client } = await signedSetup();
    service.script(ok({ pong: 'ok' }));
    await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(service.requests).toHaveLength(1);
  });

  it('response signing: a correctly signed answer to a POST with a body passes (request body hash line)', async () => {
    const { service, client } = await signedSetup();
    const body = { amount: '1.50', memo: 'naïve' };
    service.script(ok({ your_request_body: body }));
    await expect(client.echo(body)).resolves.toEqual({ your_request_body: body });
  });

  it('response signing: a timestamp 290 s old is still within the 300 s window', async () => {
    const { service, client } = await signedSetup();
    service.script(ok({ pong: 'ok' }, { signing: { timestampOffsetSeconds: -290 } }));
    await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
  });

  it('response signing: a signed 90000 is verified, then retried as usual on a safe call', async () => {
    const { service, client, delays } = await signedSetup();
    service.script(apiError(90000, 500), ok(3));
    await expect(client.getCheckoutIntentStatus(INTENT_ID)).resolves.toBe(3);
    expect(service.requests).toHaveLength(2);
    expect(delays).toHaveLength(1);
  });

  it('response signing off: unsigned responses are accepted', async () => {
    const service = await startFakeService();
    service.script(ok({ pong: 'ok' }));
    await expect(makeClient(service, { signedResponse: false }).ping()).resolves.toMatchObject({
      pong: 'ok',
    });
  });
});

describe('response signing: refused', () => {
  it('response signing: missing X-Response-* headers -> ResponseSignatureError, not retried', async () => {
    const { service, client, delays } = await signedSetup();
    service.script(ok({ pong: 'ok' }, { signing: { omit: true } }), ok({ pong: 'ok' }));
    await expectSignatureError(client.ping(), /missing_header/);
    expect(service.requests).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it.each(['X-Response-Timestamp', 'X-Response-Nonce', 'X-Response-Signature'] as const)(
    'response signing: only %s missing -> ResponseSignatureError naming it',
    async (header) => {
      const { service, client } = await signedSetup();
      service.script(ok({ pong: 'ok' }, { signing: { dropHeader: header } }));
      const err = await expectSignatureError(client.ping(), /missing_header/);
      expect(err.reason).toContain(header);
    },
  );

  it('response signing: tampered body -> ResponseSignatureError, not retried', async () => {
    const { service, client } = await signedSetup();
    service.script(ok({ pong: 'ok' }, { signing: { tamperBody: true } }), ok({ pong: 'ok' }));
    await expectSignatureError(client.ping(), /bad_signature/);
    expect(service.requests).toHaveLength(1);
  });

  it('response signing: a response signed for another request nonce -> ResponseSignatureError', async () => {
    const { service, client } = await signedSetup();
    service.script(ok({ pong: 'ok' }, { signing: { requestNonce: 'an-earlier-request' } }));
    await expectSignatureError(client.ping(), /bad_signature/);
  });

  it('response signing: replayed response nonce on a second call -> ResponseSignatureError', async () => {
    const { service, client } = await signedSetup();
    const reused: ResponseSigning = { nonce: 'resp-nonce-0001' };
    service.script(ok({ pong: 'ok' }, { signing: reused }), ok({ pong: 'ok' }, { signing: reused }));
    await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
    await expectSignatureError(client.ping(), /nonce_reused/);
    expect(service.requests).toHaveLength(2);
  });

  it.each([
    ['stale', -301],
    ['future', 301],
  ])('response signing: %s response timestamp (%i s) -> ResponseSignatureError', async (_kind, offset) => {
    const { service, client } = await signedSetup();
    service.script(ok({ pong: 'ok' }, { signing: { timestampOffsetSeconds: offset } }), ok({ pong: 'ok' }));
    await expectSignatureError(client.ping(), /stale_timestamp/);
    expect(service.requests).toHaveLength(1);
  });
});

describe('response signing: error responses are verified too', () => {
  it('response signing: a correctly signed 10001 surfaces as SvcApiError 10001', async () => {
    const { service, client } = await signedSetup();
    service.script(apiError(10001, 400, {}, { message: 'Validation error', requestId: 'req_s1' }));
    const err = await rejectionOf(client.fail());
    expect(err).toBeInstanceOf(SvcApiError);
    expect(err).toMatchObject({ code: 10001, httpStatus: 400, requestId: 'req_s1' });
  });

  it('response signing: an unsigned 10001 -> ResponseSignatureError, not SvcApiError', async () => {
    const { service, client } = await signedSetup();
    service.script(apiError(10001, 400, {}, { signing: { omit: true } }));
    const err = await expectSignatureError(client.fail(), /missing_header/);
    expect(err.httpStatus).toBe(400);
  });

  it('response signing: a tampered 10001 -> ResponseSignatureError', async () => {
    const { service, client } = await signedSetup();
    service.script(apiError(10001, 400, {}, { signing: { tamperBody: true } }));
    await expectSignatureError(client.fail(), /bad_signature/);
  });

  it('response signing: a badly signed 90000 is not retried (a signature failure needs a person)', async () => {
    const { service, client, delays } = await signedSetup();
    service.script(apiError(90000, 500, {}, { signing: { tamperBody: true } }), ok({ pong: 'ok' }));
    await expectSignatureError(client.ping(), /bad_signature/);
    expect(service.requests).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it("response signing: a 500 with no X-Response-* header at all (a gateway's) is retried, not a signature error", async () => {
    const { service, client, delays } = await signedSetup();
    service.script(apiError(90000, 500, {}, { signing: { omit: true } }), ok({ pong: 'ok' }));
    await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(service.requests).toHaveLength(2);
    expect(delays).toHaveLength(1);
  });

  it('response signing: an unsigned 50108 "cancelled" is not taken as already cancelled', async () => {
    const { service, client } = await signedSetup();
    service.script(apiError(50108, 409, { status: 'cancelled', reason: 'x' }, { signing: { omit: true } }));
    await expectSignatureError(client.cancelClaimLinkAutoPayout('cl_1'), /missing_header/);
  });
});

describe('secrets', () => {
  it('secrets: the api secret appears in no error thrown in this file', () => {
    const texts = collectedErrorTexts();
    expect(texts.length).toBeGreaterThan(0);
    for (const text of texts) expect(text).not.toContain(API_SECRET);
  });
});
