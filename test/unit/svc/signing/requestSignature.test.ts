import { describe, expect, test } from 'vitest';
import { createManualClock } from '../../../../src/clock.ts';
import { createMemoryNonceStore } from '../../../../src/svc/signing/nonceStore.ts';
import type { HeaderBag } from '../../../../src/svc/signing/requestSignature.ts';
import {
  canonicalRequestString,
  nonceLifetimeSeconds,
  readHeader,
  signRequest,
  verifyRequestSignature,
} from '../../../../src/svc/signing/requestSignature.ts';

// Expected values below were computed with openssl, outside the code under test; the exact command
// is beside each one.
const SECRET = 'sk_test_3c9d';
const API_KEY = 'ak_test_1';
const T0 = 1_700_000_000;

// printf '' | openssl dgst -sha256
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

// Raw body bytes as sent: two spaces, keys out of order, a JSON unicode escape (backslash-u, 6 bytes).
const RAW_POST_BODY = String.raw`{"b":1,  "a":"caf\u00e9"}`;
// printf '%s' '{"b":1,  "a":"caf\u00e9"}' | openssl dgst -sha256
const RAW_POST_BODY_SHA256 = '146052eec397cc00d1cf4dbab5f533814e36eb7f9f1ff32ae525c81590ab7579';
// JSON.stringify(JSON.parse(RAW_POST_BODY)), i.e. what a re-serialisation would hash instead.
const RESERIALISED_BODY = '{"b":1,"a":"café"}';
// printf '%s' '{"b":1,"a":"café"}' | openssl dgst -sha256
const RESERIALISED_BODY_SHA256 = 'a0218294d88aaebda16f9ff6084a5c54dfa21bd957c0596d220044ca4c523b2f';

const GET_NONCE = '6f1c2a9e-0b7d-4c1e-9a3f-2d5b8e4c7a10';

function setup(at = T0) {
  const clock = createManualClock(new Date(at * 1000));
  const nonceStore = createMemoryNonceStore(clock);
  return { clock, nonceStore };
}

/** A valid signed POST /v1/test/post request, as it would reach the simulator. */
function validPost(overrides: { nonce?: string; timestamp?: number } = {}) {
  const signed = signRequest({
    secret: SECRET,
    method: 'POST',
    path: '/v1/test/post',
    query: '',
    body: RAW_POST_BODY,
    timestamp: overrides.timestamp ?? T0,
    nonce: overrides.nonce ?? 'n-post-1',
  });
  const headers: HeaderBag = { 'X-API-Key': API_KEY, ...signed.headers };
  return {
    secret: SECRET,
    method: 'POST',
    path: '/v1/test/post',
    query: '',
    rawBody: Buffer.from(RAW_POST_BODY, 'utf8'),
    headers,
  };
}

describe('request signing vectors (openssl)', () => {
  test('vector: GET with a query string kept as sent (b=2&a=1, order preserved)', () => {
    const canonical = canonicalRequestString({
      method: 'get',
      path: '/v1/test/ping',
      query: 'b=2&a=1',
      timestamp: T0,
      nonce: GET_NONCE,
      bodySha256: EMPTY_SHA256,
    });
    expect(canonical).toBe(`GET\n/v1/test/ping\nb=2&a=1\n1700000000\n${GET_NONCE}\n${EMPTY_SHA256}`);

    const signed = signRequest({
      secret: SECRET,
      method: 'GET',
      path: '/v1/test/ping',
      query: 'b=2&a=1',
      timestamp: T0,
      nonce: GET_NONCE,
    });
    expect(signed.bodySha256).toBe(EMPTY_SHA256);
    expect(signed.headers).toEqual({
      'X-Timestamp': '1700000000',
      'X-Nonce': GET_NONCE,
      // printf 'GET\n/v1/test/ping\nb=2&a=1\n1700000000\n6f1c2a9e-0b7d-4c1e-9a3f-2d5b8e4c7a10\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' | openssl dgst -sha256 -hmac 'sk_test_3c9d' -binary | base64
      'X-Signature': 'v1=ewM+32EHaoRfeOf5VHeSi8/pBtbg7sYf+2u42ccKneg=',
    });
  });

  test('vector: a sorted query (a=1&b=2) signs differently, so the query is not normalised', () => {
    const signed = signRequest({
      secret: SECRET,
      method: 'GET',
      path: '/v1/test/ping',
      query: 'a=1&b=2',
      timestamp: T0,
      nonce: GET_NONCE,
    });
    // printf 'GET\n/v1/test/ping\na=1&b=2\n1700000000\n6f1c2a9e-0b7d-4c1e-9a3f-2d5b8e4c7a10\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' | openssl dgst -sha256 -hmac 'sk_test_3c9d' -binary | base64
    expect(signed.headers['X-Signature']).toBe('v1=4hMHsMMe741NIr/lJPor7B1ODC7hXLfvI4k6kckPZGM=');
  });

  test('vector: POST whose raw body differs from its re-serialisation', () => {
    const signed = signRequest({
      secret: SECRET,
      method: 'POST',
      path: '/v1/test/post',
      body: Buffer.from(RAW_POST_BODY, 'utf8'),
      timestamp: T0,
      nonce: 'n-post-1',
    });
    expect(signed.bodySha256).toBe(RAW_POST_BODY_SHA256);
    // printf 'POST\n/v1/test/post\n\n1700000000\nn-post-1\n146052eec397cc00d1cf4dbab5f533814e36eb7f9f1ff32ae525c81590ab7579' | openssl dgst -sha256 -hmac 'sk_test_3c9d' -binary | base64
    expect(signed.headers['X-Signature']).toBe('v1=l8TAGC/HhTSoJk49Qkbk3tqOgLJ1HwNgj8eYfoQEKQM=');

    // The re-serialised body is a different message with a different signature.
    expect(JSON.stringify(JSON.parse(RAW_POST_BODY))).toBe(RESERIALISED_BODY);
    const reserialised = signRequest({
      secret: SECRET,
      method: 'POST',
      path: '/v1/test/post',
      body: RESERIALISED_BODY,
      timestamp: T0,
      nonce: 'n-post-1',
    });
    expect(reserialised.bodySha256).toBe(RESERIALISED_BODY_SHA256);
    // printf 'POST\n/v1/test/post\n\n1700000000\nn-post-1\na0218294d88aaebda16f9ff6084a5c54dfa21bd957c0596d220044ca4c523b2f' | openssl dgst -sha256 -hmac 'sk_test_3c9d' -binary | base64
    expect(reserialised.headers['X-Signature']).toBe('v1=EQ42E8+dbk5rJSxNEmMlXdKya2UUb3HRWn/Eh+xj4W0=');
  });

  test('vector: request with empty body and no query (method uppercased)', () => {
    // printf 'POST\n/v1/claim_link_auto_payouts/cl_01/cancel\n\n1700000000\nn-cancel-1\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' | openssl dgst -sha256 -hmac 'sk_test_3c9d' -binary | base64
    const expected = 'v1=VthKCKcYoolyjTFrFlltDCgqP94IIIhvhUrBeiF5Pwo=';
    for (const body of [undefined, '', new Uint8Array()]) {
      const signed = signRequest({
        secret: SECRET,
        method: 'post',
        path: '/v1/claim_link_auto_payouts/cl_01/cancel',
        body,
        timestamp: T0,
        nonce: 'n-cancel-1',
      });
      expect(signed.bodySha256).toBe(EMPTY_SHA256);
      expect(signed.headers['X-Signature']).toBe(expected);
    }
  });

  test('error: query given with its leading ? is refused', () => {
    expect(() =>
      canonicalRequestString({
        method: 'GET',
        path: '/v1/test/ping',
        query: '?a=1',
        timestamp: T0,
        nonce: 'n',
        bodySha256: EMPTY_SHA256,
      }),
    ).toThrow(TypeError);
  });

  test('error: a field with a line break is refused', () => {
    expect(() =>
      canonicalRequestString({
        method: 'GET',
        path: '/v1/test/ping',
        query: '',
        timestamp: T0,
        nonce: 'n\n1',
        bodySha256: EMPTY_SHA256,
      }),
    ).toThrow(TypeError);
  });
});

describe('verifyRequestSignature', () => {
  test('behavior: a valid request passes (raw bytes as a Buffer)', async () => {
    const { clock, nonceStore } = setup();
    expect(await verifyRequestSignature({ ...validPost(), clock, nonceStore })).toEqual({ ok: true });
  });

  test('behavior: the GET vector verifies with its query as sent', async () => {
    const { clock, nonceStore } = setup();
    const result = await verifyRequestSignature({
      secret: SECRET,
      method: 'GET',
      path: '/v1/test/ping',
      query: 'b=2&a=1',
      headers: {
        'x-api-key': API_KEY,
        'x-timestamp': '1700000000',
        'x-nonce': GET_NONCE,
        'x-signature': 'v1=ewM+32EHaoRfeOf5VHeSi8/pBtbg7sYf+2u42ccKneg=',
      },
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: true });
  });

  test('error: tampered method', async () => {
    const { clock, nonceStore } = setup();
    const result = await verifyRequestSignature({ ...validPost(), method: 'PUT', clock, nonceStore });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  test('error: tampered path', async () => {
    const { clock, nonceStore } = setup();
    const result = await verifyRequestSignature({ ...validPost(), path: '/v1/test/posT', clock, nonceStore });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  test('error: tampered query', async () => {
    const { clock, nonceStore } = setup();
    const result = await verifyRequestSignature({ ...validPost(), query: 'dry=1', clock, nonceStore });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  test('error: query reordered from how it was sent', async () => {
    const { clock, nonceStore } = setup();
    const result = await verifyRequestSignature({
      secret: SECRET,
      method: 'GET',
      path: '/v1/test/ping',
      query: 'a=1&b=2',
      headers: {
        'X-API-Key': API_KEY,
        'X-Timestamp': '1700000000',
        'X-Nonce': GET_NONCE,
        'X-Signature': 'v1=ewM+32EHaoRfeOf5VHeSi8/pBtbg7sYf+2u42ccKneg=',
      },
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  test('error: tampered timestamp (still within skew)', async () => {
    const { clock, nonceStore } = setup();
    const req = validPost();
    const result = await verifyRequestSignature({
      ...req,
      headers: { ...req.headers, 'X-Timestamp': String(T0 + 1) },
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  test('error: tampered nonce', async () => {
    const { clock, nonceStore } = setup();
    const req = validPost();
    const result = await verifyRequestSignature({
      ...req,
      headers: { ...req.headers, 'X-Nonce': 'n-post-2' },
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  test('error: tampered body (one byte)', async () => {
    const { clock, nonceStore } = setup();
    const result = await verifyRequestSignature({
      ...validPost(),
      rawBody: RAW_POST_BODY.replace('"b":1', '"b":2'),
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  test('error: re-serialised body instead of the raw bytes', async () => {
    const { clock, nonceStore } = setup();
    const result = await verifyRequestSignature({
      ...validPost(),
      rawBody: JSON.stringify(JSON.parse(RAW_POST_BODY)),
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  test('error: wrong secret', async () => {
    const { clock, nonceStore } = setup();
    const result = await verifyRequestSignature({
      ...validPost(),
      secret: 'sk_test_other',
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  test('error: signature without the v1= prefix', async () => {
    const { clock, nonceStore } = setup();
    const req = validPost();
    const sig = String(req.headers['X-Signature']).slice('v1='.length);
    const result = await verifyRequestSignature({
      ...req,
      headers: { ...req.headers, 'X-Signature': sig },
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  for (const header of ['X-API-Key', 'X-Timestamp', 'X-Nonce', 'X-Signature']) {
    test(`error: missing header ${header}`, async () => {
      const { clock, nonceStore } = setup();
      const req = validPost();
      const headers = { ...req.headers };
      delete headers[header];
      const result = await verifyRequestSignature({ ...req, headers, clock, nonceStore });
      expect(result).toEqual({ ok: false, reason: 'missing_header', header });
    });
  }

  test('error: empty header counts as missing', async () => {
    const { clock, nonceStore } = setup();
    const req = validPost();
    const result = await verifyRequestSignature({
      ...req,
      headers: { ...req.headers, 'X-Nonce': '' },
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: false, reason: 'missing_header', header: 'X-Nonce' });
  });

  test('error: a header given twice counts as missing (ambiguous)', async () => {
    const { clock, nonceStore } = setup();
    const req = validPost();
    const result = await verifyRequestSignature({
      ...req,
      headers: { ...req.headers, 'X-Nonce': ['n-post-1', 'n-post-2'] },
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: false, reason: 'missing_header', header: 'X-Nonce' });
  });

  test('behavior: header lookup is case-insensitive', async () => {
    const { clock, nonceStore } = setup();
    const req = validPost();
    const lower: HeaderBag = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v]),
    );
    expect(await verifyRequestSignature({ ...req, headers: lower, clock, nonceStore })).toEqual({ ok: true });
    expect(readHeader({ 'X-NONCE': ['only'] }, 'x-nonce')).toBe('only');
  });

  test('behavior: a header given twice, empty or absent reads as missing', () => {
    expect(readHeader({ 'X-Nonce': 'a', 'x-nonce': 'b' }, 'X-Nonce')).toBeUndefined();
    expect(readHeader({ 'X-Nonce': 'a', 'x-nonce': ['b'] }, 'X-Nonce')).toBeUndefined();
    expect(readHeader({ 'x-nonce': ['a', 'b'] }, 'X-Nonce')).toBeUndefined();
    expect(readHeader({ 'x-nonce': [] }, 'X-Nonce')).toBeUndefined();
    expect(readHeader({ 'x-nonce': '' }, 'X-Nonce')).toBeUndefined();
    expect(readHeader({ 'x-nonces': 'a', 'x-nonc': 'b' }, 'X-Nonce')).toBeUndefined();
    expect(readHeader({ 'X-Nonce': undefined, 'x-nonce': 'b' }, 'X-Nonce')).toBe('b');
  });

  test('error: stale timestamp (301 s old)', async () => {
    const { clock, nonceStore } = setup(T0 + 301);
    expect(await verifyRequestSignature({ ...validPost(), clock, nonceStore })).toEqual({
      ok: false,
      reason: 'stale_timestamp',
    });
  });

  test('error: stale timestamp (301 s in the future)', async () => {
    const { clock, nonceStore } = setup(T0 - 301);
    expect(await verifyRequestSignature({ ...validPost(), clock, nonceStore })).toEqual({
      ok: false,
      reason: 'stale_timestamp',
    });
  });

  test('behavior: timestamp 299 s old passes, and 299 s ahead passes', async () => {
    const late = setup(T0 + 299);
    expect(await verifyRequestSignature({ ...validPost(), ...late })).toEqual({ ok: true });
    const early = setup(T0 - 299);
    expect(await verifyRequestSignature({ ...validPost(), ...early })).toEqual({ ok: true });
  });

  test('error: non-integer timestamp is stale', async () => {
    const { clock, nonceStore } = setup();
    const req = validPost();
    for (const ts of ['1700000000.0', '1.7e9', '-1700000000', ' 1700000000', 'abc']) {
      const result = await verifyRequestSignature({
        ...req,
        headers: { ...req.headers, 'X-Timestamp': ts },
        clock,
        nonceStore,
      });
      expect(result).toEqual({ ok: false, reason: 'stale_timestamp' });
    }
  });

  test('behavior: checks run in order: missing header before stale timestamp before signature', async () => {
    const { clock, nonceStore } = setup(T0 + 1000);
    const req = validPost();
    const { 'X-API-Key': _dropped, ...withoutKey } = req.headers;
    expect(
      await verifyRequestSignature({ ...req, headers: withoutKey, method: 'PUT', clock, nonceStore }),
    ).toEqual({ ok: false, reason: 'missing_header', header: 'X-API-Key' });
    expect(await verifyRequestSignature({ ...req, method: 'PUT', clock, nonceStore })).toEqual({
      ok: false,
      reason: 'stale_timestamp',
    });
  });

  test('error: replayed nonce', async () => {
    const { clock, nonceStore } = setup();
    expect(await verifyRequestSignature({ ...validPost(), clock, nonceStore })).toEqual({ ok: true });
    clock.advance(5_000);
    expect(await verifyRequestSignature({ ...validPost(), clock, nonceStore })).toEqual({
      ok: false,
      reason: 'nonce_reused',
    });
  });

  test('error: replayed nonce just before the timestamp goes stale', async () => {
    const { clock, nonceStore } = setup(T0 - 299);
    expect(await verifyRequestSignature({ ...validPost(), clock, nonceStore })).toEqual({ ok: true });
    clock.advance(598_000); // now T0 + 299: the timestamp still passes, so the nonce must still be held.
    expect(await verifyRequestSignature({ ...validPost(), clock, nonceStore })).toEqual({
      ok: false,
      reason: 'nonce_reused',
    });
  });

  test('behavior: a bad signature does not consume the nonce', async () => {
    const { clock, nonceStore } = setup();
    const forged = validPost();
    forged.headers['X-Signature'] = 'v1=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';
    expect(await verifyRequestSignature({ ...forged, clock, nonceStore })).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    expect(await verifyRequestSignature({ ...validPost(), clock, nonceStore })).toEqual({ ok: true });
  });

  test('behavior: a stale request does not consume the nonce', async () => {
    const { clock, nonceStore } = setup();
    expect(
      await verifyRequestSignature({ ...validPost({ timestamp: T0 - 301 }), clock, nonceStore }),
    ).toEqual({ ok: false, reason: 'stale_timestamp' });
    expect(await verifyRequestSignature({ ...validPost(), clock, nonceStore })).toEqual({ ok: true });
  });

  test('error: nonce with a line break is a bad signature, not a crash', async () => {
    const { clock, nonceStore } = setup();
    const req = validPost();
    const result = await verifyRequestSignature({
      ...req,
      headers: { ...req.headers, 'X-Nonce': 'n-post-1\nx' },
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });
});

describe('nonceLifetimeSeconds', () => {
  test('security: the nonce outlives the last moment its timestamp passes the skew check', () => {
    // Claimed 0.9 s into second T0 with a timestamp 300 s ahead: the check passes while the
    // floored clock reads at most T0 + 600, i.e. until T0 + 601 exactly; held from T0 + 0.9 that
    // needs more than 600 s.
    const clock = createManualClock(new Date(T0 * 1000 + 900));
    const held = nonceLifetimeSeconds({ timestamp: T0 + 300, clock, skewSeconds: 300, nonceTtlSeconds: 600 });
    expect(T0 + 0.9 + held).toBeGreaterThanOrEqual(T0 + 601);
  });

  test('behavior: never less than the configured lifetime', () => {
    const clock = createManualClock(new Date(T0 * 1000));
    expect(nonceLifetimeSeconds({ timestamp: T0 - 300, clock, skewSeconds: 300, nonceTtlSeconds: 600 })).toBe(
      600,
    );
  });
});
