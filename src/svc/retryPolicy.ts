import { SvcApiError, SvcError, SvcTransportError, UnknownOutcomeError } from './errors.ts';

/**
 * The client's retry policy (docs/decisions.md, "Service client retry policy"), as pure functions
 * so that it can be read and tested apart from HTTP.
 *
 * - `safe` calls may be repeated without a second effect: GETs, the test routes, claim-link
 *   create with the same reference_id, and cancel (a repeat answers 50108 "cancelled").
 * - `unsafe` is create-checkout-intent, which has no idempotency key.
 */
export type Idempotency = 'safe' | 'unsafe';

export interface RetrySettings {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** A 40001 asking for a longer wait than this is handed back to the caller (a job reschedules). */
  maxRetryAfterMs: number;
}

export const defaultRetrySettings: RetrySettings = {
  maxAttempts: 5,
  baseDelayMs: 250,
  maxDelayMs: 20_000,
  maxRetryAfterMs: 60_000,
};

const UNITS_MS: Record<string, number> = {
  ms: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
};

/**
 * Parses 40001's details.retry_after: "30s", "30 seconds", "1500ms", "2m", "1.5s" or a bare number
 * (seconds, as in HTTP Retry-After). Returns milliseconds, or undefined when it cannot be read.
 */
export function parseRetryAfter(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return Math.ceil(value * 1000);
  if (typeof value !== 'string') return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  if (!match?.[1]) return undefined;
  const unit = (match[2] ?? '').toLowerCase();
  const factor = unit === '' ? 1000 : UNITS_MS[unit];
  if (factor === undefined) return undefined;
  return Math.ceil(Number(match[1]) * factor);
}

/** Full-jitter exponential backoff: uniform in [0, min(cap, base * 2^(attempt-1))]. */
export function backoffDelay(attempt: number, settings: RetrySettings, random: () => number): number {
  const ceiling = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(random() * ceiling);
}

export type RetryDecision = { retry: true; delayMs: number } | { retry: false };

/**
 * Whether to try again after `error` on attempt number `attempt` (1-based). An unsafe call is
 * retried only when the service provably did not act: a 40001, or a connection never made.
 */
export function decideRetry(
  error: unknown,
  idempotency: Idempotency,
  attempt: number,
  settings: RetrySettings,
  random: () => number,
): RetryDecision {
  if (attempt >= settings.maxAttempts) return { retry: false };
  if (!(error instanceof SvcError) || error instanceof UnknownOutcomeError) return { retry: false };
  if (error instanceof SvcApiError && error.code === 40001) {
    const asked = error.retryAfterMs;
    if (asked === undefined) return { retry: true, delayMs: backoffDelay(attempt, settings, random) };
    if (asked > settings.maxRetryAfterMs) return { retry: false };
    return { retry: true, delayMs: asked };
  }
  if (idempotency === 'unsafe' && !(error instanceof SvcTransportError && !error.reachedService)) {
    return { retry: false };
  }
  if (!error.retryable) return { retry: false };
  return { retry: true, delayMs: backoffDelay(attempt, settings, random) };
}

/**
 * For an unsafe call, turns an error after which the service may have acted into
 * UnknownOutcomeError; errors that prove it did not act pass through unchanged.
 */
export function mayHaveActed(error: unknown): boolean {
  if (error instanceof SvcTransportError) return error.reachedService;
  if (error instanceof SvcApiError)
    return error.httpStatus >= 500 || error.code === 90000 || error.code === 99999;
  // A protocol or signature failure means a response came back that we cannot trust or read.
  return true;
}
