/**
 * Claim-link auto-payouts: 50103 is retried with the same reference_id only where the spec says no
 * funds moved (reason_code signer_error, plutus_code 8148), decided from the stable fields and never
 * from the human `reason`; the long create timeout; and cancel's "already cancelled" reading of 50108.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SvcApiError, SvcTransportError } from '../../../src/svc/errors.ts';
import {
  API_SECRET,
  apiError,
  CLAIM_LINK_ID,
  cancelResultPayload,
  claimLinkRequest,
  claimLinkResultPayload,
  collectedErrorTexts,
  hang,
  makeClient,
  ok,
  REFERENCE_ID,
  recordingSleep,
  rejectionOf,
  startFakeService,
  stopFakeServices,
} from './fakeService.ts';

afterEach(stopFakeServices);

const retry = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000 };

describe('claim-link create: 50103 funding failures', () => {
  it.each([
    [
      'reason_code signer_error',
      { reason_code: 'signer_error', reason: 'session expired: re-authorize, do not retry' },
    ],
    ['plutus_code 8148', { plutus_code: 8148, reason: 'policy_denied by wallet policy; never retry this' }],
    [
      'plutus_code 8148 with an unknown reason_code',
      { plutus_code: 8148, reason_code: 'brand_new_category', reason: 'insufficient balance' },
    ],
  ])('claim-link create: 50103 %s is retried with the SAME body and reference_id', async (_case, details) => {
    const service = await startFakeService();
    service.script(apiError(50103, 500, details, { message: 'funding failed' }), ok(claimLinkResultPayload));
    const { delays, sleep } = recordingSleep();
    const client = makeClient(service, { sleep, retry, random: () => 0.5 });
    await expect(client.createClaimLinkAutoPayout(claimLinkRequest)).resolves.toEqual(claimLinkResultPayload);
    expect(service.requests).toHaveLength(2);
    const [first, second] = service.requests;
    expect(first?.rawBody.length).toBeGreaterThan(0);
    expect(second?.rawBody.equals(first?.rawBody ?? Buffer.alloc(0))).toBe(true);
    expect(JSON.parse(second?.rawBody.toString('utf8') ?? '{}').reference_id).toBe(REFERENCE_ID);
    expect(second?.nonce).not.toBe(first?.nonce);
    expect(delays).toEqual([50]);
  });

  it.each([
    ['session_expired', 500, 'temporary signer error, retry with the same reference_id', /re-authorize/],
    ['policy_denied', 400, 'signer_error: transient, please retry', /policy/],
  ])(
    'claim-link create: 50103 reason_code %s (HTTP %i) is not retried and carries an action (reason text is misleading)',
    async (reasonCode, status, reason, actionPattern) => {
      const service = await startFakeService();
      const details = { reason_code: reasonCode, reason, plutus_code: 7001 };
      service.script(apiError(50103, status, details, { requestId: 'req_fund' }), ok(claimLinkResultPayload));
      const { delays, sleep } = recordingSleep();
      const err = await rejectionOf(
        makeClient(service, { sleep, retry }).createClaimLinkAutoPayout(claimLinkRequest),
      );
      expect(err).toBeInstanceOf(SvcApiError);
      const api = err as SvcApiError;
      expect(api).toMatchObject({ code: 50103, retryable: false, details, requestId: 'req_fund' });
      expect(api.action).toEqual(expect.any(String));
      expect(api.action?.length).toBeGreaterThan(0);
      expect(api.action).toMatch(actionPattern);
      expect(api.message).toContain(api.action);
      expect(service.requests).toHaveLength(1);
      expect(delays).toEqual([]);
    },
  );

  it('claim-link create: 50103 without a known reason_code or 8148 (e.g. insufficient balance) is not retried', async () => {
    const service = await startFakeService();
    service.script(apiError(50103, 400, { reason: 'signer_error, retry' }), ok(claimLinkResultPayload));
    const err = await rejectionOf(makeClient(service, { retry }).createClaimLinkAutoPayout(claimLinkRequest));
    expect(err).toMatchObject({ code: 50103, retryable: false });
    expect((err as SvcApiError).action).toBeTruthy();
    expect(service.requests).toHaveLength(1);
  });

  it('claim-link create: 50106 (reference_id reused with other parameters) is not retried', async () => {
    const service = await startFakeService();
    service.script(
      apiError(50106, 409, {}, { message: 'reference_id conflict' }),
      ok(claimLinkResultPayload),
    );
    const { delays, sleep } = recordingSleep();
    const err = await rejectionOf(
      makeClient(service, { sleep, retry }).createClaimLinkAutoPayout(claimLinkRequest),
    );
    expect(err).toMatchObject({ code: 50106, httpStatus: 409, retryable: false });
    expect(service.requests).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('claim-link create: an idempotent replay (token null, idempotent_hit true) is read as a result', async () => {
    const service = await startFakeService();
    const replay = {
      ...claimLinkResultPayload,
      token: null,
      funding_tx_hash: null,
      funded_amount: null,
      idempotent_hit: true,
    };
    service.script(ok(replay));
    await expect(makeClient(service).createClaimLinkAutoPayout(claimLinkRequest)).resolves.toEqual(replay);
  });
});

describe('claim-link create: timeout', () => {
  it('claim-link create: with timeouts.defaultMs 200 and claimLinkCreateMs unset, a 600 ms answer still succeeds', async () => {
    const service = await startFakeService();
    service.script(ok(claimLinkResultPayload, { delayMs: 600 }));
    const client = makeClient(service, { timeouts: { defaultMs: 200 }, retry: { maxAttempts: 1 } });
    const started = performance.now();
    await expect(client.createClaimLinkAutoPayout(claimLinkRequest)).resolves.toEqual(claimLinkResultPayload);
    expect(performance.now() - started).toBeGreaterThanOrEqual(590);
    expect(service.requests).toHaveLength(1);
  });

  it('claim-link create: ...while a GET with the same 600 ms server delay times out at defaultMs', async () => {
    const service = await startFakeService();
    service.script(ok(42, { delayMs: 600 }));
    const client = makeClient(service, { timeouts: { defaultMs: 200 }, retry: { maxAttempts: 1 } });
    const err = await rejectionOf(client.getCheckoutIntentStatus('665f1c2e9b1d4a0012345678'));
    expect(err).toBeInstanceOf(SvcTransportError);
    expect(err.message).toContain('no response within 200 ms');
  });

  it('claim-link create: an explicit claimLinkCreateMs is honoured (server never answers)', async () => {
    const service = await startFakeService();
    service.script(hang());
    const client = makeClient(service, {
      timeouts: { defaultMs: 5000, claimLinkCreateMs: 150 },
      retry: { maxAttempts: 1 },
    });
    const err = await rejectionOf(client.createClaimLinkAutoPayout(claimLinkRequest));
    expect(err).toBeInstanceOf(SvcTransportError);
    expect(err.message).toContain('no response within 150 ms');
  });
});

describe('claim-link cancel', () => {
  it('cancel: success resolves with already_cancelled false', async () => {
    const service = await startFakeService();
    service.script(ok(cancelResultPayload));
    await expect(makeClient(service).cancelClaimLinkAutoPayout(CLAIM_LINK_ID)).resolves.toEqual({
      ...cancelResultPayload,
      already_cancelled: false,
    });
    expect(service.requests).toHaveLength(1);
    expect(service.requests[0]?.rawBody.length).toBe(0);
  });

  it('cancel: 50108 with details.status "cancelled" resolves with already_cancelled true', async () => {
    const service = await startFakeService();
    service.script(apiError(50108, 409, { status: 'cancelled', reason: 'claim link already cancelled' }));
    await expect(makeClient(service).cancelClaimLinkAutoPayout(CLAIM_LINK_ID)).resolves.toEqual({
      claim_link_id: CLAIM_LINK_ID,
      status: 'cancelled',
      already_cancelled: true,
    });
    expect(service.requests).toHaveLength(1);
  });

  it('cancel: a lost response then 50108 "cancelled" on the retry resolves as already cancelled', async () => {
    const service = await startFakeService();
    service.script({ kind: 'destroy' }, apiError(50108, 409, { status: 'cancelled', reason: 'already' }));
    const client = makeClient(service, { retry });
    await expect(client.cancelClaimLinkAutoPayout(CLAIM_LINK_ID)).resolves.toMatchObject({
      already_cancelled: true,
    });
    expect(service.requests).toHaveLength(2);
  });

  it.each(['claimed', 'claiming', 'pending_deposit', 'expired'])(
    'cancel: 50108 with status "%s" rejects SvcApiError 50108, not retried',
    async (status) => {
      const service = await startFakeService();
      const details = { status, reason: 'cancelled: the link cannot be cancelled now' };
      service.script(apiError(50108, 409, details, { requestId: 'req_nc' }));
      const err = await rejectionOf(makeClient(service, { retry }).cancelClaimLinkAutoPayout(CLAIM_LINK_ID));
      expect(err).toBeInstanceOf(SvcApiError);
      expect(err).toMatchObject({
        code: 50108,
        httpStatus: 409,
        details,
        requestId: 'req_nc',
        retryable: false,
      });
      expect(service.requests).toHaveLength(1);
    },
  );

  it('cancel: 50107 (unknown link) rejects SvcApiError 50107, not retried', async () => {
    const service = await startFakeService();
    service.script(apiError(50107, 404, {}, { message: 'claim link not found' }));
    const err = await rejectionOf(makeClient(service, { retry }).cancelClaimLinkAutoPayout('cl_nope'));
    expect(err).toMatchObject({ code: 50107, httpStatus: 404 });
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
