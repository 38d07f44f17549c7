/**
 * Error codes: every `code` the service documents, with its HTTP status where the spec gives one.
 * Any code not here is still a failure (the spec: treat any non-zero code as failure).
 */

export type SvcErrorCodeInfo = {
  readonly code: number;
  readonly name: string;
  /** null where the spec does not give the HTTP status. */
  readonly httpStatus: number | null;
  readonly meaning: string;
};

export const SvcErrorCode = {
  SUCCESS: 0,
  VALIDATION_ERROR: 10001,
  MISSING_AUTH_HEADERS: 20001,
  INVALID_SIGNATURE: 20002,
  FORBIDDEN: 30001,
  SCOPE_FORBIDDEN: 30002,
  RATE_LIMITED: 40001,
  CHECKOUT_INTENT_NOT_FOUND: 50001,
  CHECKOUT_INTENT_CREATE_ERROR: 50002,
  AUTO_PAYOUT_FUNDING_FAILED: 50103,
  LIVE_SIGNING_DISABLED: 50104,
  REFERENCE_ID_CONFLICT: 50106,
  CLAIM_LINK_NOT_FOUND: 50107,
  CLAIM_LINK_NOT_CANCELLABLE: 50108,
  INTERNAL_ERROR: 90000,
  UNKNOWN_ERROR: 99999,
} as const;
export type SvcErrorCode = (typeof SvcErrorCode)[keyof typeof SvcErrorCode];
export type SvcErrorCodeName = keyof typeof SvcErrorCode;

export const SVC_ERROR_CODES: Readonly<Record<SvcErrorCode, SvcErrorCodeInfo>> = {
  0: { code: 0, name: 'SUCCESS', httpStatus: 200, meaning: 'success' },
  10001: {
    code: 10001,
    name: 'VALIDATION_ERROR',
    httpStatus: 400,
    meaning:
      'validation error: bad or missing field, both/neither of currency and stable_coin, invalid ' +
      'accepted_stable_coins, over-precise amount, missing reference_id, or invalid JSON body',
  },
  20001: {
    code: 20001,
    name: 'MISSING_AUTH_HEADERS',
    httpStatus: 401,
    meaning: 'missing authentication headers',
  },
  20002: { code: 20002, name: 'INVALID_SIGNATURE', httpStatus: 401, meaning: 'invalid signature' },
  30001: {
    code: 30001,
    name: 'FORBIDDEN',
    httpStatus: 403,
    meaning: 'forbidden: IP not in allowlist, or no permission on the resource',
  },
  30002: {
    code: 30002,
    name: 'SCOPE_FORBIDDEN',
    httpStatus: 403,
    meaning: 'scope forbidden: store lacks claim_link:auto_payout',
  },
  40001: {
    code: 40001,
    name: 'RATE_LIMITED',
    httpStatus: 429,
    meaning: 'rate limit exceeded; details may carry retry_after',
  },
  50001: {
    code: 50001,
    name: 'CHECKOUT_INTENT_NOT_FOUND',
    httpStatus: null,
    meaning: 'checkout intent not found',
  },
  50002: {
    code: 50002,
    name: 'CHECKOUT_INTENT_CREATE_ERROR',
    httpStatus: null,
    meaning: 'create checkout intent error, including amount at or below the 0.1-coin floor',
  },
  50103: {
    code: 50103,
    name: 'AUTO_PAYOUT_FUNDING_FAILED',
    httpStatus: null,
    meaning: 'claim-link auto-payout create failed at funding or signing (including insufficient balance)',
  },
  50104: {
    code: 50104,
    name: 'LIVE_SIGNING_DISABLED',
    httpStatus: 403,
    meaning: 'live signing disabled, or sandbox key used',
  },
  50106: {
    code: 50106,
    name: 'REFERENCE_ID_CONFLICT',
    httpStatus: 409,
    meaning: 'reference_id reused with different parameters',
  },
  50107: {
    code: 50107,
    name: 'CLAIM_LINK_NOT_FOUND',
    httpStatus: 404,
    meaning: "claim link not found (unknown, malformed, or another business's)",
  },
  50108: {
    code: 50108,
    name: 'CLAIM_LINK_NOT_CANCELLABLE',
    httpStatus: 409,
    meaning: 'claim link not cancellable in its current state',
  },
  90000: { code: 90000, name: 'INTERNAL_ERROR', httpStatus: 500, meaning: 'internal server error' },
  99999: { code: 99999, name: 'UNKNOWN_ERROR', httpStatus: 500, meaning: 'unknown error' },
};

/** The documented entry for a code, or undefined for a code the spec does not list. */
export function svcErrorCodeInfo(code: number): SvcErrorCodeInfo | undefined {
  return Object.hasOwn(SVC_ERROR_CODES, code) ? SVC_ERROR_CODES[code as SvcErrorCode] : undefined;
}
