/**
 * The base of stablebooks' own errors. Each says whether a retry can help (`retryable`): a job
 * that throws one with `retryable` false fails at once (jobs/withRetryability.ts) instead of
 * spending its attempts, and a caller tells a person `action`, what to do, where one must act.
 * Messages are one line and never carry a secret.
 */
export abstract class StablebooksError extends Error {
  abstract readonly retryable: boolean;
  /** What a person should do when no retry will fix it by itself. */
  readonly action: string | undefined;

  constructor(message?: string, options: { cause?: unknown; action?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.action = options.action;
  }
}

/**
 * Whether running the same work again may succeed: our own errors say so; anything else (a
 * dropped connection, a driver's error, a timeout) may pass, so it is retried.
 */
export function isRetryable(err: unknown): boolean {
  return !(err instanceof StablebooksError) || err.retryable;
}
