/**
 * Error details: the `error.details` object of the codes we act on. Extra keys are tolerated,
 * because the service may add context without notice and that must not turn a known error into
 * an unparseable one.
 */
import { z } from 'zod';

/** 40001 rate limited. retry_after is free text such as "30s"; parse it where it is used. */
export const rateLimitedDetailsSchema = z.looseObject({
  retry_after: z.string().optional(),
});
export type RateLimitedDetails = z.output<typeof rateLimitedDetailsSchema>;

export const FUNDING_REASON_CODES = ['session_expired', 'policy_denied', 'signer_error'] as const;
export type KnownFundingReasonCode = (typeof FUNDING_REASON_CODES)[number];

/**
 * plutus_code 8148: the payout could not be signed, before broadcast. No funds moved, so a retry
 * with the same reference_id is safe and cannot pay twice.
 */
export const PLUTUS_CODE_UNSIGNED_BEFORE_BROADCAST = 8148;

/**
 * 50103 auto-payout funding failed. reason is for humans and its wording changes: never match on it.
 * reason_code is the stable category; a value we do not know yet is kept, not rejected.
 */
export const fundingFailedDetailsSchema = z.looseObject({
  reason: z.string().optional(),
  reason_code: z.union([z.enum(FUNDING_REASON_CODES), z.string()]).optional(),
  plutus_code: z.int().optional(),
});
export type FundingFailedDetails = z.output<typeof fundingFailedDetailsSchema>;

export function isKnownFundingReasonCode(code: string | undefined): code is KnownFundingReasonCode {
  return (FUNDING_REASON_CODES as readonly string[]).includes(code ?? '');
}

/** 50108 claim link not cancellable. status is the link's current status. */
export const notCancellableDetailsSchema = z.looseObject({
  status: z.string(),
  // The spec always sends it, but only status decides; a missing reason must not hide "cancelled".
  reason: z.string().optional(),
});
export type NotCancellableDetails = z.output<typeof notCancellableDetailsSchema>;

/** Cancel is not retry-idempotent: a repeat answers 50108 with status "cancelled", which means done. */
export function isAlreadyCancelled(details: NotCancellableDetails): boolean {
  return details.status === 'cancelled';
}
