import { describe, expect, test } from 'vitest';
import { createManualClock } from '../../../../src/clock.ts';
import { createMemoryNonceStore } from '../../../../src/svc/signing/nonceStore.ts';
import type { HeaderBag } from '../../../../src/svc/signing/requestSignature.ts';
import {
  canonicalWebhookString,
  signWebhook,
  verifyWebhookSignature,
} from '../../../../src/svc/signing/webhookSignature.ts';

// Expected values below were computed with openssl, outside the code under test; the exact command
// is beside each one.
const SECRET = 'sk_test_3c9d';
const T1 = 1_700_000_100;

const BODY = '{"checkout_intent_id":"ci_01","status":20,  "amount":"12.50"}';
// printf '%s' '{"checkout_intent_id":"ci_01","status":20,  "amount":"12.50"}' | openssl dgst -sha256
const BODY_SHA256 = '0357ce49698a0ef0a99f98aa6ad5a8f43a98ecee4363068434043d914c287cc9';

// printf 'allsvc:webhook:v1\nPOST\n/hooks/svc/checkout\nstore=st_a\nwh_01HZX\n1700000100\nwn-0001\n0357ce49698a0ef0a99f98aa6ad5a8f43a98ecee4363068434043d914c287cc9' | openssl dgst -sha256 -hmac 'sk_test_3c9d' -binary | base64
const SIGNATURE = 'v1=d2W1eZ4lVGIovLkp1HiTZ7u3dfzWScSOj4buRSsbHc0=';

function setup(at = T1) {
  const clock = createManualClock(new Date(at * 1000));
  const nonceStore = createMemoryNonceStore(clock);
  return { clock, nonceStore };
}

/** The vector's delivery as it reached our endpoint POST /hooks/svc/checkout?store=st_a. */
function delivery(headers?: HeaderBag) {
  return {
    secret: SECRET,
    method: 'POST',
    path: '/hooks/svc/checkout',
    query: 'store=st_a',
    rawBody: Buffer.from(BODY, 'utf8'),
    headers: headers ?? {
      'X-API-Key': 'ak_test_1',
      'X-Webhook-Id': 'wh_01HZX',
      'X-Webhook-Timestamp': '1700000100',
      'X-Webhook-Nonce': 'wn-0001',
      'X-Webhook-Signature': SIGNATURE,
      'Content-Type': 'application/json',
    },
  };
}

describe('webhook signing vectors (openssl)', () => {
  test('vector: eight-line canonical string and signature', () => {
    expect(
      canonicalWebhookString({
        method: 'post',
        path: '/hooks/svc/checkout',
        query: 'store=st_a',
        webhookId: 'wh_01HZX',
        timestamp: T1,
        nonce: 'wn-0001',
        bodySha256: BODY_SHA256,
      }),
    ).toBe(
      `allsvc:webhook:v1\nPOST\n/hooks/svc/checkout\nstore=st_a\nwh_01HZX\n1700000100\nwn-0001\n${BODY_SHA256}`,
    );

    const headers = signWebhook({
      secret: SECRET,
      method: 'POST',
      path: '/hooks/svc/checkout',
      query: 'store=st_a',
      webhookId: 'wh_01HZX',
      body: BODY,
      clock: createManualClock(new Date(T1 * 1000)),
      nonce: 'wn-0001',
    });
    expect(headers).toEqual({
      'X-Webhook-Id': 'wh_01HZX',
      'X-Webhook-Timestamp': '1700000100',
      'X-Webhook-Nonce': 'wn-0001',
      'X-Webhook-Signature': SIGNATURE,
    });
  });

  test('behavior: signWebhook mints a fresh nonce when none is given, and it verifies', async () => {
    const { clock, nonceStore } = setup();
    const headers = signWebhook({
      secret: SECRET,
      method: 'POST',
      path: '/hooks/svc/checkout',
      webhookId: 'wh_2',
      body: BODY,
      clock,
    });
    expect(headers['X-Webhook-Nonce']).toMatch(/^[0-9a-f-]{36}$/);
    const result = await verifyWebhookSignature({
      ...delivery(headers),
      query: '',
      clock,
      nonceStore,
    });
    expect(result).toEqual({ ok: true });
  });
});

describe('verifyWebhookSignature', () => {
  test('behavior: the vector verifies', async () => {
    const { clock, nonceStore } = setup();
    expect(await verifyWebhookSignature({ ...delivery(), clock, nonceStore })).toEqual({ ok: true });
  });

  const requestTamperings: Array<[string, Partial<ReturnType<typeof delivery>>]> = [
    ['method', { method: 'PUT' }],
    ['path', { path: '/hooks/svc/payout' }],
    ['query', { query: 'store=st_b' }],
    ['body', { rawBody: Buffer.from(BODY.replace('12.50', '125.0'), 'utf8') }],
    ['body (re-serialised instead of raw bytes)', { rawBody: Buffer.from(JSON.stringify(JSON.parse(BODY))) }],
  ];
  for (const [field, change] of requestTamperings) {
    test(`error: tampered ${field}`, async () => {
      const { clock, nonceStore } = setup();
      const result = await verifyWebhookSignature({ ...delivery(), ...change, clock, nonceStore });
      expect(result).toEqual({ ok: false, reason: 'bad_signature' });
    });
  }

  const headerTamperings: Array<[string, string, string]> = [
    ['webhook id', 'X-Webhook-Id', 'wh_01HZY'],
    ['timestamp', 'X-Webhook-Timestamp', '1700000101'],
    ['nonce', 'X-Webhook-Nonce', 'wn-0002'],
    ['signature', 'X-Webhook-Signature', 'v1=d2W1eZ4lVGIovLkp1HiTZ7u3dfzWScSOj4buRSsbHc1='],
  ];
  for (const [field, header, value] of headerTamperings) {
    test(`error: tampered ${field}`, async () => {
      const { clock, nonceStore } = setup();
      const base = delivery();
      const headers = { ...base.headers, [header]: value };
      expect(await verifyWebhookSignature({ ...base, headers, clock, nonceStore })).toEqual({
        ok: false,
        reason: 'bad_signature',
      });
    });
  }

  for (const header of ['X-Webhook-Id', 'X-Webhook-Timestamp', 'X-Webhook-Nonce', 'X-Webhook-Signature']) {
    test(`error: missing header ${header}`, async () => {
      const { clock, nonceStore } = setup();
      const base = delivery();
      const headers = { ...base.headers };
      delete headers[header];
      expect(await verifyWebhookSignature({ ...base, headers, clock, nonceStore })).toEqual({
        ok: false,
        reason: 'missing_header',
        header,
      });
    });
  }

  test('behavior: X-API-Key is not needed to verify (it is not signed)', async () => {
    const { clock, nonceStore } = setup();
    const base = delivery();
    const { 'X-API-Key': _unsigned, ...headers } = base.headers;
    expect(await verifyWebhookSignature({ ...base, headers, clock, nonceStore })).toEqual({ ok: true });
  });

  test('error: stale timestamp (301 s old)', async () => {
    const { clock, nonceStore } = setup(T1 + 301);
    expect(await verifyWebhookSignature({ ...delivery(), clock, nonceStore })).toEqual({
      ok: false,
      reason: 'stale_timestamp',
    });
  });

  test('error: stale timestamp (301 s in the future)', async () => {
    const { clock, nonceStore } = setup(T1 - 301);
    expect(await verifyWebhookSignature({ ...delivery(), clock, nonceStore })).toEqual({
      ok: false,
      reason: 'stale_timestamp',
    });
  });

  test('behavior: timestamp 299 s old passes', async () => {
    const { clock, nonceStore } = setup(T1 + 299);
    expect(await verifyWebhookSignature({ ...delivery(), clock, nonceStore })).toEqual({ ok: true });
  });

  test('error: replayed nonce', async () => {
    const { clock, nonceStore } = setup();
    expect(await verifyWebhookSignature({ ...delivery(), clock, nonceStore })).toEqual({ ok: true });
    clock.advance(60_000);
    expect(await verifyWebhookSignature({ ...delivery(), clock, nonceStore })).toEqual({
      ok: false,
      reason: 'nonce_reused',
    });
  });

  test('error: replayed nonce under a different X-API-Key (nonce key is not namespaced by the unsigned key)', async () => {
    const { clock, nonceStore } = setup();
    expect(await verifyWebhookSignature({ ...delivery(), clock, nonceStore })).toEqual({ ok: true });
    const base = delivery();
    const headers = { ...base.headers, 'X-API-Key': 'ak_test_2' };
    expect(await verifyWebhookSignature({ ...base, headers, clock, nonceStore })).toEqual({
      ok: false,
      reason: 'nonce_reused',
    });
  });

  test('behavior: a forged delivery does not consume the nonce', async () => {
    const { clock, nonceStore } = setup();
    expect(
      await verifyWebhookSignature({ ...delivery(), rawBody: Buffer.from('{}'), clock, nonceStore }),
    ).toEqual({ ok: false, reason: 'bad_signature' });
    expect(await verifyWebhookSignature({ ...delivery(), clock, nonceStore })).toEqual({ ok: true });
  });
});
