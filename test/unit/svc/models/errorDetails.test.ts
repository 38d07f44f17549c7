import { describe, expect, it } from 'vitest';
import {
  fundingFailedDetailsSchema,
  isAlreadyCancelled,
  isKnownFundingReasonCode,
  notCancellableDetailsSchema,
  PLUTUS_CODE_UNSIGNED_BEFORE_BROADCAST,
  rateLimitedDetailsSchema,
} from '../../../../src/svc/models/errorDetails.ts';

describe('40001 rate limited details', () => {
  it('behavior: retry_after optional, extra keys kept', () => {
    expect(rateLimitedDetailsSchema.parse({ retry_after: '30s' })).toEqual({ retry_after: '30s' });
    expect(rateLimitedDetailsSchema.parse({})).toEqual({});
    expect(rateLimitedDetailsSchema.parse({ limit: 100 })).toEqual({ limit: 100 });
  });

  it('error: retry_after must be a string', () => {
    expect(rateLimitedDetailsSchema.safeParse({ retry_after: 30 }).success).toBe(false);
  });
});

describe('50103 funding failed details', () => {
  it('behavior: known reason_code', () => {
    const details = fundingFailedDetailsSchema.parse({
      reason: 'auto-payout session expired; re-authorize',
      reason_code: 'session_expired',
      plutus_code: 8101,
    });
    expect(details.reason_code).toBe('session_expired');
    expect(isKnownFundingReasonCode(details.reason_code)).toBe(true);
  });

  it('behavior: signing failed before broadcast', () => {
    const details = fundingFailedDetailsSchema.parse({ reason: 'could not sign payout', plutus_code: 8148 });
    expect(details.plutus_code).toBe(PLUTUS_CODE_UNSIGNED_BEFORE_BROADCAST);
    expect(details.reason_code).toBeUndefined();
  });

  it('behavior: a future reason_code is kept, not rejected', () => {
    const details = fundingFailedDetailsSchema.parse({ reason_code: 'quota_exhausted', trace: 'abc' });
    expect(details.reason_code).toBe('quota_exhausted');
    expect(isKnownFundingReasonCode(details.reason_code)).toBe(false);
    expect(details).toHaveProperty('trace', 'abc');
  });

  it('behavior: all fields optional', () => {
    expect(fundingFailedDetailsSchema.parse({})).toEqual({});
    expect(isKnownFundingReasonCode(undefined)).toBe(false);
  });

  it.each([{ plutus_code: '8148' }, { plutus_code: 8148.5 }, { reason_code: 3 }, { reason: null }])(
    'error: rejects %j',
    (v) => {
      expect(fundingFailedDetailsSchema.safeParse(v).success).toBe(false);
    },
  );
});

describe('50108 not cancellable details', () => {
  it('behavior: status and reason', () => {
    const details = notCancellableDetailsSchema.parse({ status: 'claimed', reason: 'link already claimed' });
    expect(isAlreadyCancelled(details)).toBe(false);
  });

  it('behavior: a repeated cancel is already done', () => {
    const details = notCancellableDetailsSchema.parse({
      status: 'cancelled',
      reason: 'link is cancelled',
      claim_link_id: 'cl_1',
    });
    expect(isAlreadyCancelled(details)).toBe(true);
  });

  it('error: status is required; a missing reason is tolerated', () => {
    expect(notCancellableDetailsSchema.safeParse({ status: 'claimed' }).success).toBe(true);
    expect(notCancellableDetailsSchema.safeParse({ reason: 'x' }).success).toBe(false);
  });
});
