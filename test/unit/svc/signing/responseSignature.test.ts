import { describe, expect, test } from 'vitest';
import { createManualClock } from '../../../../src/clock.ts';
import { createMemoryNonceStore } from '../../../../src/svc/signing/nonceStore.ts';
import type { HeaderBag } from '../../../../src/svc/signing/requestSignature.ts';
import {
  canonicalResponseString,
  signResponse,
  verifyResponseSignature,
} from '../../../../src/svc/signing/responseSignature.ts';

// Expected values below were computed with openssl, outside the code under test; the exact command
// is beside each one.
const SECRET = 'sk_test_3c9d';
const T0 = 1_700_000_000;

// printf '' | openssl dgst -sha256
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

const PING_REQUEST_NONCE = '6f1c2a9e-0b7d-4c1e-9a3f-2d5b8e4c7a10';
const PING_RESPONSE_BODY = '{"code":0,"payload":{"pong":"ok"},"error":null,"request_id":"req_01"}';
// printf '%s' '{"code":0,"payload":{"pong":"ok"},"error":null,"request_id":"req_01"}' | openssl dgst -sha256
const PING_RESPONSE_BODY_SHA256 = '1eb91007618111929f2fe36c8e8bf27eb771a2310b41ca6483e391e4a9816293';

const POST_REQUEST_BODY = String.raw`{"b":1,  "a":"caf\u00e9"}`;
// printf '%s' '{"b":1,  "a":"caf\u00e9"}' | openssl dgst -sha256
const POST_REQUEST_BODY_SHA256 = '146052eec397cc00d1cf4dbab5f533814e36eb7f9f1ff32ae525c81590ab7579';
const ERROR_RESPONSE_BODY =
  '{"code":20002,"payload":null,"error":{"message":"Invalid signature","details":{"reason":"signature_mismatch"}},"request_id":"req_02"}';
// printf '%s' '{"code":20002,"payload":null,"error":{"message":"Invalid signature","details":{"reason":"signature_mismatch"}},"request_id":"req_02"}' | openssl dgst -sha256
const ERROR_RESPONSE_BODY_SHA256 = '64798a8c13f86fa41651af824b50d655bb45d819971637fb8eb5039314bfb958';

// printf '200\n/v1/test/ping\n6f1c2a9e-0b7d-4c1e-9a3f-2d5b8e4c7a10\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n1700000001\nrn-0001\n1eb91007618111929f2fe36c8e8bf27eb771a2310b41ca6483e391e4a9816293' | openssl dgst -sha256 -hmac 'sk_test_3c9d' -binary | base64
const PING_RESPONSE_SIGNATURE = 'v1=7Wxz2CQekXoh1sLSN0iStzNrHuFy596EscUg08/UFsY=';

function setup(at: number) {
  const clock = createManualClock(new Date(at * 1000));
  const nonceStore = createMemoryNonceStore(clock);
  return { clock, nonceStore };
}

/** The 200 ping response of the vector, as the client received it. */
function pingResponse(headers?: HeaderBag) {
  return {
    secret: SECRET,
    status: 200,
    path: '/v1/test/ping',
    requestNonce: PING_REQUEST_NONCE,
    requestBody: undefined as Uint8Array | string | undefined,
    responseBody: Buffer.from(PING_RESPONSE_BODY, 'utf8'),
    headers: headers ?? {
      'X-Response-Timestamp': '1700000001',
      'X-Response-Nonce': 'rn-0001',
      'X-Response-Signature': PING_RESPONSE_SIGNATURE,
      'X-Request-Id': 'req_01',
    },
  };
}

describe('response signing vectors (openssl)', () => {
  test('vector: success response (200 ping)', () => {
    expect(
      canonicalResponseString({
        status: 200,
        path: '/v1/test/ping',
        requestNonce: PING_REQUEST_NONCE,
        requestBodySha256: EMPTY_SHA256,
        responseTimestamp: T0 + 1,
        responseNonce: 'rn-0001',
        responseBodySha256: PING_RESPONSE_BODY_SHA256,
      }),
    ).toBe(
      `200\n/v1/test/ping\n${PING_REQUEST_NONCE}\n${EMPTY_SHA256}\n1700000001\nrn-0001\n${PING_RESPONSE_BODY_SHA256}`,
    );
    const headers = signResponse({
      secret: SECRET,
      status: 200,
      path: '/v1/test/ping',
      requestNonce: PING_REQUEST_NONCE,
      responseBody: PING_RESPONSE_BODY,
      clock: createManualClock(new Date((T0 + 1) * 1000)),
      nonce: 'rn-0001',
    });
    expect(headers).toEqual({
      'X-Response-Timestamp': '1700000001',
      'X-Response-Nonce': 'rn-0001',
      'X-Response-Signature': PING_RESPONSE_SIGNATURE,
    });
  });

  test('vector: error response (401 envelope, code 20002) to a POST with a raw body', () => {
    const headers = signResponse({
      secret: SECRET,
      status: 401,
      path: '/v1/test/post',
      requestNonce: 'n-post-1',
      requestBody: Buffer.from(POST_REQUEST_BODY, 'utf8'),
      responseBody: ERROR_RESPONSE_BODY,
      clock: createManualClock(new Date((T0 + 2) * 1000)),
      nonce: 'rn-0002',
    });
    expect(
      canonicalResponseString({
        status: 401,
        path: '/v1/test/post',
        requestNonce: 'n-post-1',
        requestBodySha256: POST_REQUEST_BODY_SHA256,
        responseTimestamp: '1700000002',
        responseNonce: 'rn-0002',
        responseBodySha256: ERROR_RESPONSE_BODY_SHA256,
      }),
    ).toBe(
      `401\n/v1/test/post\nn-post-1\n${POST_REQUEST_BODY_SHA256}\n1700000002\nrn-0002\n${ERROR_RESPONSE_BODY_SHA256}`,
    );
    expect(headers).toEqual({
      'X-Response-Timestamp': '1700000002',
      'X-Response-Nonce': 'rn-0002',
      // printf '401\n/v1/test/post\nn-post-1\n146052eec397cc00d1cf4dbab5f533814e36eb7f9f1ff32ae525c81590ab7579\n1700000002\nrn-0002\n64798a8c13f86fa41651af824b50d655bb45d819971637fb8eb5039314bfb958' | openssl dgst -sha256 -hmac 'sk_test_3c9d' -binary | base64
      'X-Response-Signature': 'v1=IGc7rF/l/f+C//oL0qvDGNw/NBhzbLEr0lpRyEuk4W4=',
    });
  });

  test('behavior: signResponse mints a fresh nonce when none is given', () => {
    const clock = createManualClock(new Date(T0 * 1000));
    const args = {
      secret: SECRET,
      status: 200,
      path: '/v1/test/ping',
      requestNonce: 'n',
      responseBody: '{}',
      clock,
    };
    const a = signResponse(args);
    const b = signResponse(args);
    expect(a['X-Response-Nonce']).not.toBe(b['X-Response-Nonce']);
    expect(a['X-Response-Nonce']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('verifyResponseSignature', () => {
  test('behavior: the success vector verifies', async () => {
    const { clock, nonceStore } = setup(T0 + 1);
    expect(await verifyResponseSignature({ ...pingResponse(), clock, nonceStore })).toEqual({ ok: true });
  });

  test('behavior: the error vector verifies', async () => {
    const { clock, nonceStore } = setup(T0 + 2);
    const result = await verifyResponseSignature({
      secret: SECRET,
      status: 401,
      path: '/v1/test/post',
      requestNonce: 'n-post-1',
      requestBody: POST_REQUEST_BODY,
      responseBody: ERROR_RESPONSE_BODY,
      headers: {
        'x-response-timestamp': '1700000002',
        'x-response-nonce': 'rn-0002',
        'x-response-signature': 'v1=IGc7rF/l/f+C//oL0qvDGNw/NBhzbLEr0lpRyEuk4W4=',
      },
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: true });
  });

  const tamperings: Array<[string, Partial<ReturnType<typeof pingResponse>>]> = [
    ['status', { status: 201 }],
    ['path', { path: '/v1/test/fail' }],
    ['request nonce (answer to another request)', { requestNonce: 'n-other' }],
    ['request body', { requestBody: '{}' }],
    ['response body', { responseBody: Buffer.from(PING_RESPONSE_BODY.replace('ok', 'ko'), 'utf8') }],
  ];
  for (const [field, change] of tamperings) {
    test(`error: tampered ${field}`, async () => {
      const { clock, nonceStore } = setup(T0 + 1);
      const result = await verifyResponseSignature({ ...pingResponse(), ...change, clock, nonceStore });
      expect(result).toEqual({ ok: false, reason: 'bad_signature' });
    });
  }

  test('error: tampered response timestamp', async () => {
    const { clock, nonceStore } = setup(T0 + 1);
    const base = pingResponse();
    const headers = { ...base.headers, 'X-Response-Timestamp': '1700000002' };
    expect(await verifyResponseSignature({ ...base, headers, clock, nonceStore })).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
  });

  test('error: tampered response nonce', async () => {
    const { clock, nonceStore } = setup(T0 + 1);
    const base = pingResponse();
    const headers = { ...base.headers, 'X-Response-Nonce': 'rn-0009' };
    expect(await verifyResponseSignature({ ...base, headers, clock, nonceStore })).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
  });

  for (const header of ['X-Response-Timestamp', 'X-Response-Nonce', 'X-Response-Signature']) {
    test(`error: missing header ${header}`, async () => {
      const { clock, nonceStore } = setup(T0 + 1);
      const base = pingResponse();
      const headers = { ...base.headers };
      delete headers[header];
      expect(await verifyResponseSignature({ ...base, headers, clock, nonceStore })).toEqual({
        ok: false,
        reason: 'missing_header',
        header,
      });
    });
  }

  test('error: unsigned response (signing expected but no X-Response-* headers)', async () => {
    const { clock, nonceStore } = setup(T0 + 1);
    expect(
      await verifyResponseSignature({ ...pingResponse({ 'X-Request-Id': 'req_01' }), clock, nonceStore }),
    ).toEqual({ ok: false, reason: 'missing_header', header: 'X-Response-Timestamp' });
  });

  test('error: stale timestamp (301 s old)', async () => {
    const { clock, nonceStore } = setup(T0 + 1 + 301);
    expect(await verifyResponseSignature({ ...pingResponse(), clock, nonceStore })).toEqual({
      ok: false,
      reason: 'stale_timestamp',
    });
  });

  test('behavior: timestamp 299 s old passes', async () => {
    const { clock, nonceStore } = setup(T0 + 1 + 299);
    expect(await verifyResponseSignature({ ...pingResponse(), clock, nonceStore })).toEqual({ ok: true });
  });

  test('error: response nonce reused', async () => {
    const { clock, nonceStore } = setup(T0 + 1);
    expect(await verifyResponseSignature({ ...pingResponse(), clock, nonceStore })).toEqual({ ok: true });
    clock.advance(1_000);
    expect(await verifyResponseSignature({ ...pingResponse(), clock, nonceStore })).toEqual({
      ok: false,
      reason: 'nonce_reused',
    });
  });

  test('error: response nonce reused after the 300 s TTL while its timestamp still passes', async () => {
    // Our clock is 299 s behind the server: the response is fresh, then replayed 301 s later, when
    // its timestamp is only 2 s old. The nonce must be held for the whole skew window, not just 300 s.
    const { clock, nonceStore } = setup(T0 + 1 - 299);
    expect(await verifyResponseSignature({ ...pingResponse(), clock, nonceStore })).toEqual({ ok: true });
    clock.advance(301_000);
    expect(await verifyResponseSignature({ ...pingResponse(), clock, nonceStore })).toEqual({
      ok: false,
      reason: 'nonce_reused',
    });
  });

  test('behavior: a forged response does not consume the response nonce', async () => {
    const { clock, nonceStore } = setup(T0 + 1);
    const forged = pingResponse();
    expect(
      await verifyResponseSignature({ ...forged, responseBody: '{"code":0}', clock, nonceStore }),
    ).toEqual({ ok: false, reason: 'bad_signature' });
    expect(await verifyResponseSignature({ ...pingResponse(), clock, nonceStore })).toEqual({ ok: true });
  });
});
