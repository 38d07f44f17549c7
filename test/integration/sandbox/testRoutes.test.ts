import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { systemClock, unixSeconds } from '../../../src/clock.ts';
import { createSvcClient } from '../../../src/svc/client.ts';
import { SvcApiError } from '../../../src/svc/errors.ts';
import { createMemoryNonceStore } from '../../../src/svc/signing/nonceStore.ts';
import { signRequest } from '../../../src/svc/signing/requestSignature.ts';
import { verifyResponseSignature } from '../../../src/svc/signing/responseSignature.ts';
import { startTestSandbox } from '../../helpers/sandboxHarness.ts';

const sandbox = await startTestSandbox({
  config: {
    businesses: [
      {
        business_id: 'biz_1',
        stores: [
          { store_id: 'st_plain', api_key: 'pk_plain', api_secret: 'sk_plain_0123456789abcdef' },
          {
            store_id: 'st_signed',
            api_key: 'pk_signed',
            api_secret: 'sk_signed_0123456789abcdef',
            signed_response: true,
          },
          {
            store_id: 'st_walled',
            api_key: 'pk_walled',
            api_secret: 'sk_walled_0123456789abcdef',
            ip_allowlist: ['10.0.0.0/8'],
          },
          {
            store_id: 'st_local',
            api_key: 'pk_local',
            api_secret: 'sk_local_0123456789abcdef',
            ip_allowlist: ['127.0.0.0/8'],
          },
          {
            store_id: 'st_v6',
            api_key: 'pk_v6',
            api_secret: 'sk_v6_0123456789abcdef0',
            ip_allowlist: ['2001:db8::/32'],
          },
          {
            store_id: 'st_slow',
            api_key: 'pk_slow',
            api_secret: 'sk_slow_0123456789abcdef',
            rate_limit: { requests_per_second: 0.5, burst: 2 },
          },
        ],
      },
    ],
  },
});
const url = sandbox.url;

const client = (apiKey: string, apiSecret: string, signedResponse = false) =>
  createSvcClient({
    baseUrl: url,
    credentials: { apiKey, apiSecret, signedResponse },
    retry: { maxAttempts: 1 },
  });

/** A hand-made signed request, for the cases the client would never send. */
function signedFetch(
  path: string,
  opts: { secret?: string; timestamp?: number; nonce?: string; body?: string } = {},
) {
  const body = opts.body;
  const signed = signRequest({
    secret: opts.secret ?? 'sk_plain_0123456789abcdef',
    method: body === undefined ? 'GET' : 'POST',
    path,
    body: body ?? '',
    timestamp: opts.timestamp ?? unixSeconds(systemClock),
    nonce: opts.nonce ?? randomUUID(),
  });
  return fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      'X-API-Key': 'pk_plain',
      ...signed.headers,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body,
  });
}

describe('sandbox test routes', () => {
  it('behavior: ping, echo of the exact object, and the always-failing route', async () => {
    const c = client('pk_plain', 'sk_plain_0123456789abcdef');
    expect(await c.ping()).toEqual({ pong: 'ok' });
    const raw = '{"b":1,  "a":"caf\\u00e9"}';
    expect(await c.echo({ rawBody: raw })).toEqual({ your_request_body: { b: 1, a: 'café' } });
    const failure = await c.fail().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(SvcApiError);
    expect(failure).toMatchObject({ code: 10001, httpStatus: 400 });
  });

  it('behavior: a store with signed_response gets signed responses, errors included', async () => {
    const c = client('pk_signed', 'sk_signed_0123456789abcdef', true);
    expect(await c.ping()).toEqual({ pong: 'ok' });
    await expect(c.fail()).rejects.toMatchObject({ code: 10001 });
    const res = await fetch(`${url}/v1/test/ping`);
    expect(res.headers.get('x-response-signature')).toBeNull();
  });

  it('error: missing headers 20001, wrong secret 20002, stale timestamp, replayed nonce', async () => {
    const missing = await fetch(`${url}/v1/test/ping`, { headers: { 'X-API-Key': 'pk_plain' } });
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as { code: number }).code).toBe(20001);

    await expect(client('pk_plain', 'sk_wrong_0000000000000000').ping()).rejects.toMatchObject({
      code: 20002,
      httpStatus: 401,
    });

    const stale = await signedFetch('/v1/test/ping', { timestamp: unixSeconds(systemClock) - 301 });
    expect(await stale.json()).toMatchObject({
      code: 20002,
      error: { details: { reason: 'stale_timestamp' } },
    });

    const nonce = randomUUID();
    expect((await signedFetch('/v1/test/ping', { nonce })).status).toBe(200);
    const replay = await signedFetch('/v1/test/ping', { nonce });
    expect(await replay.json()).toMatchObject({
      code: 20002,
      error: { details: { reason: 'nonce_reused' } },
    });
  });

  // Spec: with signed_response on, "every response, errors included" is signed; rule 1 makes any
  // missing signing header 20001. The key names the store, so its 20001 is signed like its 20002.
  it.each(['X-Signature', 'X-Timestamp', 'X-Nonce'])(
    'error: without %s, a signed_response store gets 20001 with a valid response signature',
    async (missing) => {
      const path = '/v1/test/ping';
      const secret = 'sk_signed_0123456789abcdef';
      const nonce = randomUUID();
      const { headers } = signRequest({
        secret,
        method: 'GET',
        path,
        timestamp: unixSeconds(systemClock),
        nonce,
      });
      const sent: Record<string, string> = { 'X-API-Key': 'pk_signed', ...headers };
      delete sent[missing];
      const res = await fetch(`${url}${path}`, { headers: sent });
      const body = Buffer.from(await res.arrayBuffer());
      const envelope = JSON.parse(body.toString()) as { code: number; request_id: string };
      expect(res.status).toBe(401);
      expect(envelope).toMatchObject({ code: 20001, payload: null });
      expect(res.headers.get('x-request-id')).toBe(envelope.request_id);
      const verdict = await verifyResponseSignature({
        secret,
        status: res.status,
        path,
        // What we sent as X-Nonce: nothing when that is the missing header.
        requestNonce: missing === 'X-Nonce' ? '' : nonce,
        responseBody: body,
        headers: Object.fromEntries(res.headers),
        clock: systemClock,
        nonceStore: createMemoryNonceStore(systemClock),
      });
      expect(verdict).toEqual({ ok: true });
    },
  );

  it('behavior: a 20001 with no key, or a key of no store, has nothing to sign with', async () => {
    const cases: Array<Record<string, string>> = [{}, { 'X-API-Key': 'pk_nobody' }];
    for (const headers of cases) {
      const res = await fetch(`${url}/v1/test/ping`, { headers });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { code: number }).code).toBe(20001);
      expect(res.headers.get('x-response-signature')).toBeNull();
    }
  });

  it('error: a body that is not a JSON object is 10001; a tampered body fails the signature', async () => {
    const notObject = await signedFetch('/v1/test/post', { body: '[1,2]' });
    expect(notObject.status).toBe(400);
    expect(((await notObject.json()) as { code: number }).code).toBe(10001);

    const signed = signRequest({
      secret: 'sk_plain_0123456789abcdef',
      method: 'POST',
      path: '/v1/test/post',
      body: '{"a":1}',
      timestamp: unixSeconds(systemClock),
      nonce: randomUUID(),
    });
    const tampered = await fetch(`${url}/v1/test/post`, {
      method: 'POST',
      headers: { 'X-API-Key': 'pk_plain', ...signed.headers, 'content-type': 'application/json' },
      body: '{"a":2}',
    });
    expect(await tampered.json()).toMatchObject({
      code: 20002,
      error: { details: { reason: 'signature_mismatch' } },
    });
  });

  it('error: the IP allowlist refuses other addresses with 30001', async () => {
    await expect(client('pk_walled', 'sk_walled_0123456789abcdef').ping()).rejects.toMatchObject({
      code: 30001,
      httpStatus: 403,
    });
    expect(await client('pk_local', 'sk_local_0123456789abcdef').ping()).toEqual({ pong: 'ok' });
    await expect(client('pk_v6', 'sk_v6_0123456789abcdef0').ping()).rejects.toMatchObject({ code: 30001 });
  });

  it('error: an undecodable path or a very long id still gets an envelope', async () => {
    const bad = await fetch(`${url}/v1/claim_link_auto_payouts/%ZZ/cancel`, { method: 'POST' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 10001, payload: null });
    await expect(
      client('pk_plain', 'sk_plain_0123456789abcdef').getCheckoutIntent('a'.repeat(150)),
    ).rejects.toMatchObject({
      code: 50001,
    });
  });

  it('error: the per-key rate limit answers 40001 with retry_after once the burst is spent', async () => {
    const slow = client('pk_slow', 'sk_slow_0123456789abcdef');
    await slow.ping();
    await slow.ping();
    const limited = await slow.ping().catch((e: unknown) => e);
    expect(limited).toMatchObject({ code: 40001, httpStatus: 429 });
    expect((limited as SvcApiError).retryAfterMs).toBeGreaterThanOrEqual(1000);
    // Another key is not affected.
    expect(await client('pk_plain', 'sk_plain_0123456789abcdef').ping()).toEqual({ pong: 'ok' });
  });

  it('behavior: the control API lists chains and store wallets, and reorgs the chain', async () => {
    const chains =
      await sandbox.control<
        Array<{ chain_id: number; tokens: { USDT: string; USDC: string }; decimals: number }>
      >('/_sandbox/chains');
    expect(chains.body).toEqual([
      expect.objectContaining({
        chain_id: 11155111,
        decimals: 6,
        tokens: { USDT: expect.stringMatching(/^0x/), USDC: expect.stringMatching(/^0x/) },
      }),
    ]);
    const stores =
      await sandbox.control<
        Array<{ store_id: string; wallets: Record<string, { custody: { balances: { USDT: string } } }> }>
      >('/_sandbox/stores');
    expect(
      stores.body.find((s) => s.store_id === 'st_plain')?.wallets['11155111']?.custody.balances.USDT,
    ).toBe('1000000');
    const reorg = await sandbox.control<{ orphaned_blocks: string[] }>('/_sandbox/chain/reorg', {
      chain_id: 11155111,
      depth: 1,
    });
    expect(reorg.status).toBe(200);
    expect(reorg.body.orphaned_blocks).toHaveLength(1);
  });
});
