import { StablebooksError } from '../errors/stablebooksError.ts';
/**
 * The error taxonomy of the service's protocol. Every error says whether a retry can help
 * (`retryable`) and, where a person must act, what to do (`action`). Secrets never appear in
 * messages: requests are described by method and path only.
 */
export abstract class SvcError extends StablebooksError {}

/** The service answered with a non-zero envelope code. */
export class SvcApiError extends SvcError {
  override name = 'SvcApiError';
  readonly code: number;
  readonly httpStatus: number;
  readonly details: Record<string, unknown>;
  readonly requestId: string | undefined;
  readonly endpoint: string;
  readonly retryable: boolean;
  /** For 40001: how long the service asked us to wait, in ms, when it said. */
  readonly retryAfterMs: number | undefined;

  constructor(init: {
    endpoint: string;
    code: number;
    httpStatus: number;
    message: string;
    details: Record<string, unknown>;
    requestId: string | undefined;
    retryable: boolean;
    action?: string;
    retryAfterMs?: number;
  }) {
    super(
      `${init.endpoint}: service error ${init.code} (HTTP ${init.httpStatus}): ${init.message}` +
        (init.requestId ? ` [request_id ${init.requestId}]` : '') +
        (init.action ? `; ${init.action}` : ''),
      { action: init.action },
    );
    this.endpoint = init.endpoint;
    this.code = init.code;
    this.httpStatus = init.httpStatus;
    this.details = init.details;
    this.requestId = init.requestId;
    this.retryable = init.retryable;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/**
 * The request did not complete at the network level. `reachedService` is false only when the
 * connection was never made (refused, DNS), so the service cannot have acted on it.
 */
export class SvcTransportError extends SvcError {
  override name = 'SvcTransportError';
  readonly retryable = true;
  constructor(
    readonly endpoint: string,
    readonly reachedService: boolean,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${endpoint}: ${message}`, options);
  }
}

/** The response was not the protocol's: not JSON, no envelope, or a payload of the wrong shape. */
export class SvcProtocolError extends SvcError {
  override name = 'SvcProtocolError';
  constructor(
    readonly endpoint: string,
    readonly httpStatus: number,
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(`${endpoint}: ${message} (HTTP ${httpStatus})`, options);
  }
}

/**
 * A store with signed_response got a response whose signature is missing, wrong, stale or
 * replayed. Never retried: it means a proxy, a misconfiguration or an attacker, and a person must look.
 */
export class ResponseSignatureError extends SvcError {
  override name = 'ResponseSignatureError';
  readonly retryable = false;
  constructor(
    readonly endpoint: string,
    readonly reason: string,
    readonly httpStatus: number,
  ) {
    super(
      `${endpoint}: response signature check failed (${reason}, HTTP ${httpStatus}); check the store's signed_response setting and api_secret`,
    );
  }
}

/**
 * Create-checkout-intent has no idempotency key: once the request may have reached the service,
 * a retry could create a second intent. The caller gets this instead, with what is known, and
 * records the unknown outcome for a person (or a later lookup by order_id) to resolve.
 */
export class UnknownOutcomeError extends SvcError {
  override name = 'UnknownOutcomeError';
  readonly retryable = false;
  constructor(
    readonly endpoint: string,
    readonly known: {
      orderId: string | null;
      attempts: number;
      lastHttpStatus: number | undefined;
      requestId: string | undefined;
    },
    options: { cause: unknown },
  ) {
    super(
      `${endpoint}: outcome unknown after ${known.attempts} attempt(s)` +
        (known.orderId ? ` for order_id ${known.orderId}` : '') +
        ': the intent may or may not exist; do not create it again before checking' +
        (options.cause instanceof Error ? ` (${options.cause.message})` : ''),
      options,
    );
  }
}

/** We refused to send a request that breaks the spec's rules; nothing was sent. */
export class SvcInvalidRequestError extends SvcError {
  override name = 'SvcInvalidRequestError';
  readonly retryable = false;
  constructor(
    readonly endpoint: string,
    readonly problems: string[],
  ) {
    super(`${endpoint}: invalid request: ${problems.join('; ')}`);
  }
}

/**
 * HTTP 429 that is not the service's 40001: a CDN, gateway or proxy in front of the service
 * refused the request (its own page, not the service's envelope; or, for a store with signed
 * responses, a 429 without any X-Response-* header). The service never saw the request, so it is
 * read like a 40001: retried, and the API key paused for the Retry-After header (seconds or an
 * HTTP date), 1 s when there is none. The body is not trusted, so nothing is read from it.
 */
export class SvcRateLimitError extends SvcError {
  override name = 'SvcRateLimitError';
  readonly retryable = true;
  readonly httpStatus = 429;
  constructor(
    readonly endpoint: string,
    /** From the Retry-After header, in ms; undefined when absent or unreadable. */
    readonly retryAfterMs: number | undefined,
  ) {
    super(
      `${endpoint}: rate limited: HTTP 429 without the service's 40001 envelope (a gateway or proxy in front of it); ` +
        (retryAfterMs === undefined ? 'no Retry-After' : `retry after ${Math.ceil(retryAfterMs / 1000)} s`),
    );
  }
}

/**
 * Not sent: the service (40001) or a gateway in front of it (HTTP 429) rate-limited this API key
 * and asked us to wait, and the wait (shared by every process holding the key, see
 * SvcClientOptions.keyPause) is not over.
 */
export class SvcKeyPausedError extends SvcError {
  override name = 'SvcKeyPausedError';
  readonly retryable = true;
  constructor(
    readonly endpoint: string,
    readonly retryAfterMs: number,
  ) {
    super(
      `${endpoint}: not sent: this API key was rate-limited (40001 or HTTP 429); ` +
        `it is paused for another ${Math.ceil(retryAfterMs / 1000)} s`,
    );
  }
}

/**
 * How long to wait before using the API key again, when the error says it is rate-limited: a
 * 40001 from the service, an HTTP 429 from a gateway in front of it, or the key's pause.
 */
export function rateLimitWaitMs(err: unknown): number | undefined {
  if (err instanceof SvcKeyPausedError) return err.retryAfterMs;
  if (err instanceof SvcApiError && err.code === 40001) return err.retryAfterMs ?? DEFAULT_RATE_LIMIT_WAIT_MS;
  if (err instanceof SvcRateLimitError) return err.retryAfterMs ?? DEFAULT_RATE_LIMIT_WAIT_MS;
  return undefined;
}

/**
 * A service error no retry fixes: not retryable, and not rate limiting (which waiting fixes). A
 * person must act (the IP allowlist, the credentials, an intent the service does not know).
 */
export function isPermanentSvcError(err: unknown): err is SvcError {
  return err instanceof SvcError && !err.retryable && rateLimitWaitMs(err) === undefined;
}

/** The wait after a 40001 or 429 that did not say how long (retry_after absent or unreadable). */
export const DEFAULT_RATE_LIMIT_WAIT_MS = 1000;
