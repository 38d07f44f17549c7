import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type Clock, systemClock, unixSeconds } from '../clock.ts';
import {
  ResponseSignatureError,
  rateLimitWaitMs,
  SvcApiError,
  type SvcError,
  SvcInvalidRequestError,
  SvcKeyPausedError,
  SvcProtocolError,
  SvcRateLimitError,
  SvcTransportError,
  UnknownOutcomeError,
} from './errors.ts';
import { type HttpAnswer, sendHttp } from './httpTransport.ts';
import { stringifyJson } from './json.ts';
import {
  type CheckoutIntent,
  type CreateCheckoutIntentResult,
  checkoutIntentSchema,
  checkoutIntentStatusPayloadSchema,
  createCheckoutIntentRequestSchema,
  createCheckoutIntentResultSchema,
} from './models/checkoutIntent.ts';
import type { CheckoutStatus } from './models/checkoutStatus.ts';
import {
  type CancelClaimLinkResult,
  type CreateClaimLinkResult,
  cancelClaimLinkResultSchema,
  createClaimLinkRequestSchema,
  createClaimLinkResultSchema,
} from './models/claimLink.ts';
import { anyEnvelopeSchema } from './models/envelope.ts';
import {
  fundingFailedDetailsSchema,
  isAlreadyCancelled,
  notCancellableDetailsSchema,
  PLUTUS_CODE_UNSIGNED_BEFORE_BROADCAST,
} from './models/errorDetails.ts';
import {
  backoffDelay,
  decideRetry,
  defaultRetrySettings,
  type Idempotency,
  mayHaveActed,
  parseRetryAfter,
  type RetryDecision,
  type RetrySettings,
} from './retryPolicy.ts';
import { createMemoryNonceStore, type NonceStore } from './signing/nonceStore.ts';
import { signRequest } from './signing/requestSignature.ts';
import { verifyResponseSignature } from './signing/responseSignature.ts';

/**
 * The typed, signed client of the Merchant Payments Service: one method per endpoint of the spec,
 * one store's credentials per client. It signs every attempt afresh, verifies signed responses,
 * and applies the retry policy of retryPolicy.ts. See docs/decisions.md for the policy.
 */
export interface SvcCredentials {
  apiKey: string;
  /** Secret: used to sign, never logged or put in an error. */
  apiSecret: string;
  /** The store has response signing on: an unsigned or badly signed response is an error. */
  signedResponse: boolean;
}

/** One finished HTTP attempt, for metrics and logs (no ids, no amounts, no secrets). */
export interface SvcAttempt {
  endpoint: SvcEndpoint;
  attempt: number;
  httpStatus: number | undefined;
  /** The envelope code, or the kind of failure when there was none (rate_limited: a gateway's 429). */
  outcome: number | 'transport_error' | 'protocol_error' | 'signature_error' | 'rate_limited';
  durationMs: number;
}

export interface SvcClientOptions {
  baseUrl: string;
  credentials: SvcCredentials;
  clock?: Clock;
  /** Remembers response nonces (at least 5 minutes) to reject replayed responses. */
  responseNonces?: NonceStore;
  retry?: Partial<RetrySettings>;
  timeouts?: { defaultMs?: number; claimLinkCreateMs?: number };
  onAttempt?: (attempt: SvcAttempt) => void;
  /**
   * The key's pause after a 40001, shared by every process that holds the key (the daemon keeps
   * it in Redis, beside the key's poll queue). A request during the pause is not sent
   * (SvcKeyPausedError); a 40001 starts or renews it for the retry_after the service gave.
   */
  keyPause?: SvcKeyPause;
  /** Injected in tests to observe waits without spending them. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export interface SvcKeyPause {
  /** How long the key stays paused, in ms; 0 when it is not. */
  remainingMs(): Promise<number>;
  start(ms: number): Promise<void>;
}

export type SvcEndpoint =
  | 'test.ping'
  | 'test.fail'
  | 'test.post'
  | 'checkout_intents.create'
  | 'checkout_intents.get'
  | 'checkout_intents.status'
  | 'claim_links.create'
  | 'claim_links.cancel';

export type CreateCheckoutIntentInput = z.input<typeof createCheckoutIntentRequestSchema>;
export type CreateClaimLinkInput = z.input<typeof createClaimLinkRequestSchema>;

/** Cancel succeeded now, or had already succeeded earlier (50108 with details.status "cancelled"). */
export type CancelClaimLinkOutcome =
  | (CancelClaimLinkResult & { already_cancelled: false })
  | { claim_link_id: string; status: 'cancelled'; already_cancelled: true };

export interface SvcClient {
  ping(): Promise<{ pong: string }>;
  /** The service's always-failing route: resolves never, rejects with SvcApiError 10001. */
  fail(): Promise<never>;
  /** POST /v1/test/post: echoes the body. `rawBody` lets a caller send exact bytes. */
  echo(body: Record<string, unknown> | { rawBody: string }): Promise<{ your_request_body: unknown }>;
  createCheckoutIntent(request: CreateCheckoutIntentInput): Promise<CreateCheckoutIntentResult>;
  getCheckoutIntent(id: string): Promise<CheckoutIntent>;
  getCheckoutIntentStatus(id: string): Promise<CheckoutStatus>;
  createClaimLinkAutoPayout(request: CreateClaimLinkInput): Promise<CreateClaimLinkResult>;
  cancelClaimLinkAutoPayout(id: string): Promise<CancelClaimLinkOutcome>;
}

const DEFAULT_TIMEOUT_MS = 15_000;
/** Claim-link create blocks while funding settles (up to about 90 s). */
const CLAIM_LINK_CREATE_TIMEOUT_MS = 120_000;

/** Connection errors that prove the request never left: the service cannot have acted on it. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

interface CallSpec<T> {
  endpoint: SvcEndpoint;
  method: 'GET' | 'POST';
  path: string;
  /** Exact bytes to send, or undefined for no body. */
  body?: string;
  payload: z.ZodType<T>;
  idempotency: Idempotency;
  timeoutMs: number;
  /** Endpoint-specific reading of an error envelope (retryability, action). */
  classify?: (
    code: number,
    details: Record<string, unknown>,
  ) => { retryable: boolean; action?: string } | undefined;
  /** Context for UnknownOutcomeError. */
  orderId?: string | null;
}

export function createSvcClient(options: SvcClientOptions): SvcClient {
  const clock = options.clock ?? systemClock;
  const responseNonces = options.responseNonces ?? createMemoryNonceStore(clock);
  const retry: RetrySettings = { ...defaultRetrySettings, ...options.retry };
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const random = options.random ?? Math.random;
  const defaultTimeout = options.timeouts?.defaultMs ?? DEFAULT_TIMEOUT_MS;
  const claimCreateTimeout = Math.max(options.timeouts?.claimLinkCreateMs ?? CLAIM_LINK_CREATE_TIMEOUT_MS, 1);
  const base = options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`;
  const { credentials } = options;

  async function attemptOnce<T>(spec: CallSpec<T>, attempt: number): Promise<T> {
    const url = new URL(spec.path.replace(/^\//, ''), base);
    const nonce = randomUUID();
    const signed = signRequest({
      secret: credentials.apiSecret,
      method: spec.method,
      path: url.pathname,
      query: url.search.replace(/^\?/, ''),
      body: spec.body ?? '',
      timestamp: unixSeconds(clock),
      nonce,
    });
    const started = performance.now();
    const report = (httpStatus: number | undefined, outcome: SvcAttempt['outcome']) =>
      options.onAttempt?.({
        endpoint: spec.endpoint,
        attempt,
        httpStatus,
        outcome,
        durationMs: performance.now() - started,
      });

    let res: HttpAnswer;
    try {
      res = await sendHttp({
        url,
        method: spec.method,
        headers: {
          'X-API-Key': credentials.apiKey,
          ...signed.headers,
          ...(spec.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        },
        body: spec.body,
        timeoutMs: spec.timeoutMs,
      });
    } catch (err) {
      report(undefined, 'transport_error');
      throw transportError(spec, err);
    }
    const bytes = res.body;
    // An answer that is not the service's (not its envelope, or unsigned for a signed store) is
    // taken for what its status says of the way there: 429 a rate limit, 5xx a retryable failure.
    const notFromService = (problem: string, cause?: unknown): SvcError => {
      const err = gatewayError(spec.endpoint, res, problem, clock.now(), cause);
      report(res.status, err instanceof SvcRateLimitError ? 'rate_limited' : 'protocol_error');
      return err;
    };

    if (credentials.signedResponse) {
      // The service signs every answer of a signed store, errors included. A 5xx or 429 with no
      // X-Response-* header at all was written by something in front of it (a CDN, a gateway, a
      // proxy): a failure to reach the service, retried as one, not a forged answer. Its body is
      // not trusted. Any other unsigned or badly signed answer is a signature error, as before.
      if ((res.status >= 500 || res.status === 429) && !carriesResponseSignature(res.headers)) {
        throw notFromService('answer without the service signature (a gateway or proxy answered)');
      }
      const check = await verifyResponseSignature({
        secret: credentials.apiSecret,
        status: res.status,
        path: url.pathname,
        requestNonce: nonce,
        requestBody: spec.body ?? '',
        responseBody: bytes,
        headers: res.headers,
        clock,
        nonceStore: responseNonces,
      });
      if (!check.ok) {
        report(res.status, 'signature_error');
        throw new ResponseSignatureError(
          spec.endpoint,
          check.header ? `${check.reason}: ${check.header}` : check.reason,
          res.status,
        );
      }
    }

    let json: unknown;
    try {
      json = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw notFromService('response is not JSON', err);
    }
    const envelope = anyEnvelopeSchema.safeParse(json);
    if (!envelope.success) throw notFromService('response is not a service envelope');
    const { code, error, payload, request_id: requestId } = envelope.data;
    report(res.status, code);
    if (code !== 0) {
      const details = error?.details ?? {};
      const special = spec.classify?.(code, details);
      // Read raw: the spec says a string, but a number of seconds must not be lost to a strict schema.
      // Without it, an HTTP Retry-After header (the 40001 travels as HTTP 429) says how long.
      const retryAfterMs =
        code === 40001
          ? (parseRetryAfter(details.retry_after) ?? retryAfterHeaderMs(res.headers, clock.now()))
          : undefined;
      throw new SvcApiError({
        endpoint: spec.endpoint,
        code,
        httpStatus: res.status,
        message: error?.message ?? 'no error message',
        details,
        requestId: requestId ?? undefined,
        retryable:
          special?.retryable ?? (code === 40001 || code === 90000 || code === 99999 || res.status >= 500),
        ...(special?.action ? { action: special.action } : {}),
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      });
    }
    const parsed = spec.payload.safeParse(payload);
    if (!parsed.success) {
      throw new SvcProtocolError(
        spec.endpoint,
        res.status,
        `payload does not match the spec: ${parsed.error.issues
          .slice(0, 3)
          .map((i) => `${i.path.join('.') || '(payload)'}: ${i.message}`)
          .join('; ')}`,
        false,
      );
    }
    return parsed.data;
  }

  async function call<T>(spec: CallSpec<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      // Outside the try: a request not sent needs neither the retry policy nor an unknown outcome.
      // If the pause cannot be read, the request goes: the service enforces its limit anyway.
      const pausedMs = (await options.keyPause?.remainingMs().catch(() => 0)) ?? 0;
      if (pausedMs > 0) throw new SvcKeyPausedError(spec.endpoint, pausedMs);
      try {
        return await attemptOnce(spec, attempt);
      } catch (err) {
        const waitMs = rateLimitWaitMs(err);
        // The caller must still get the service's 40001, even if the pause could not be saved.
        if (waitMs !== undefined) await options.keyPause?.start(waitMs).catch(() => undefined);
        // A gateway's 429 proves, like a 40001, that the service did not act.
        if (spec.idempotency === 'unsafe' && !(err instanceof SvcRateLimitError) && mayHaveActed(err)) {
          throw new UnknownOutcomeError(
            spec.endpoint,
            {
              orderId: spec.orderId ?? null,
              attempts: attempt,
              lastHttpStatus:
                err instanceof SvcApiError || err instanceof SvcProtocolError ? err.httpStatus : undefined,
              requestId: err instanceof SvcApiError ? err.requestId : undefined,
            },
            { cause: err },
          );
        }
        const decision = decide(err, spec.idempotency, attempt);
        if (!decision.retry) throw err;
        await sleep(decision.delayMs);
      }
    }
  }

  /**
   * The retry policy (retryPolicy.ts), with a gateway's 429 read as the policy reads a 40001 (on
   * every call, create included: the service did not act): wait what Retry-After asked, unless it
   * is longer than maxRetryAfterMs (then the caller gets it and the key's pause does the waiting);
   * without Retry-After, back off.
   */
  function decide(err: unknown, idempotency: Idempotency, attempt: number): RetryDecision {
    if (!(err instanceof SvcRateLimitError)) return decideRetry(err, idempotency, attempt, retry, random);
    if (attempt >= retry.maxAttempts) return { retry: false };
    if (err.retryAfterMs === undefined) return { retry: true, delayMs: backoffDelay(attempt, retry, random) };
    return err.retryAfterMs > retry.maxRetryAfterMs
      ? { retry: false }
      : { retry: true, delayMs: err.retryAfterMs };
  }

  const get = <T>(endpoint: SvcEndpoint, path: string, payload: z.ZodType<T>) =>
    call({ endpoint, method: 'GET', path, payload, idempotency: 'safe', timeoutMs: defaultTimeout });

  return {
    ping: () => get('test.ping', '/v1/test/ping', pingPayload),
    fail: () => get('test.fail', '/v1/test/fail', neverPayload),
    echo: async (body) =>
      call({
        endpoint: 'test.post',
        method: 'POST',
        path: '/v1/test/post',
        body: 'rawBody' in body && typeof body.rawBody === 'string' ? body.rawBody : stringifyJson(body),
        payload: echoPayload,
        idempotency: 'safe',
        timeoutMs: defaultTimeout,
      }),

    createCheckoutIntent: async (request) => {
      const valid = validate('checkout_intents.create', createCheckoutIntentRequestSchema, request);
      return call({
        endpoint: 'checkout_intents.create',
        method: 'POST',
        path: '/v1/checkout_intents/',
        body: stringifyJson(valid),
        payload: createCheckoutIntentResultSchema,
        idempotency: 'unsafe',
        timeoutMs: defaultTimeout,
        orderId: valid.order_id ?? null,
      });
    },
    getCheckoutIntent: async (id) =>
      get(
        'checkout_intents.get',
        `/v1/checkout_intents/${pathSegment('checkout_intents.get', id)}`,
        checkoutIntentSchema,
      ),
    getCheckoutIntentStatus: async (id) =>
      get(
        'checkout_intents.status',
        `/v1/checkout_intents/${pathSegment('checkout_intents.status', id)}/status`,
        checkoutIntentStatusPayloadSchema,
      ),

    createClaimLinkAutoPayout: async (request) => {
      const valid = validate('claim_links.create', createClaimLinkRequestSchema, request);
      return call({
        endpoint: 'claim_links.create',
        method: 'POST',
        path: '/v1/claim_link_auto_payouts',
        body: stringifyJson(valid),
        payload: createClaimLinkResultSchema,
        // Idempotent by reference_id: the service answers a repeat with the original link.
        idempotency: 'safe',
        timeoutMs: claimCreateTimeout,
        classify: classifyClaimLinkCreateError,
      });
    },
    cancelClaimLinkAutoPayout: async (id) => {
      try {
        const result = await call({
          endpoint: 'claim_links.cancel',
          method: 'POST',
          path: `/v1/claim_link_auto_payouts/${pathSegment('claim_links.cancel', id)}/cancel`,
          body: '',
          payload: cancelClaimLinkResultSchema,
          idempotency: 'safe',
          timeoutMs: defaultTimeout,
        });
        return { ...result, already_cancelled: false as const };
      } catch (err) {
        if (err instanceof SvcApiError && err.code === 50108) {
          const details = notCancellableDetailsSchema.safeParse(err.details);
          if (details.success && isAlreadyCancelled(details.data)) {
            return { claim_link_id: id, status: 'cancelled' as const, already_cancelled: true as const };
          }
        }
        throw err;
      }
    },
  };
}

/**
 * 50103 on claim-link create: retry (same reference_id) only where the spec says no funds moved;
 * tell a person what to do otherwise. Never reads the human `reason` text.
 */
function classifyClaimLinkCreateError(
  code: number,
  rawDetails: Record<string, unknown>,
): { retryable: boolean; action?: string } | undefined {
  if (code !== 50103) return undefined;
  const details = fundingFailedDetailsSchema.safeParse(rawDetails).data;
  if (
    details?.reason_code === 'signer_error' ||
    details?.plutus_code === PLUTUS_CODE_UNSIGNED_BEFORE_BROADCAST
  ) {
    return { retryable: true };
  }
  if (details?.reason_code === 'session_expired') {
    return {
      retryable: false,
      action: 're-authorize the auto-payout session, then retry with the same reference_id',
    };
  }
  if (details?.reason_code === 'policy_denied') {
    return {
      retryable: false,
      action:
        'the wallet policy declined the signature: check chain, token and amount against the policy, re-verify it, then retry with the same reference_id',
    };
  }
  return {
    retryable: false,
    action:
      'funding failed (for example an insufficient custody balance): fix the cause, then retry with the same reference_id',
  };
}

/** The test routes' payloads are loosely specified; read only the fields the spec names. */
const pingPayload = z.looseObject({ pong: z.string() });
const echoPayload = z.looseObject({ your_request_body: z.unknown() });
const neverPayload = z.never();

function validate<S extends z.ZodType>(endpoint: SvcEndpoint, schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    throw new SvcInvalidRequestError(
      endpoint,
      parsed.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)),
    );
  }
  return parsed.data;
}

function pathSegment(endpoint: SvcEndpoint, id: string): string {
  if (!id || id.length > 200) throw new SvcInvalidRequestError(endpoint, ['id must be a non-empty string']);
  return encodeURIComponent(id);
}

const RESPONSE_SIGNATURE_HEADERS = ['x-response-timestamp', 'x-response-nonce', 'x-response-signature'];

/** Whether an answer carries any of the service's X-Response-* signature headers. */
function carriesResponseSignature(headers: Record<string, string>): boolean {
  return RESPONSE_SIGNATURE_HEADERS.some((name) => headers[name] !== undefined);
}

/**
 * The error for an answer that is not the service's (a CDN's, a gateway's, a proxy's): HTTP 429
 * is a rate limit (SvcRateLimitError, paused and retried like a 40001); otherwise a protocol
 * error, retryable when the status is 5xx.
 */
function gatewayError(
  endpoint: SvcEndpoint,
  res: HttpAnswer,
  problem: string,
  now: Date,
  cause?: unknown,
): SvcError {
  if (res.status === 429) return new SvcRateLimitError(endpoint, retryAfterHeaderMs(res.headers, now));
  return new SvcProtocolError(
    endpoint,
    res.status,
    problem,
    res.status >= 500,
    cause ? { cause } : undefined,
  );
}

/**
 * The HTTP Retry-After header (RFC 9110, section 10.2.3) in ms: delay-seconds, or an HTTP date,
 * measured from the answer's own Date header when it has one (both read from the sender's clock,
 * so our clock's skew does not count), else from `now`. A date already past is 0. Undefined when
 * absent or unreadable.
 */
export function retryAfterHeaderMs(headers: Record<string, string>, now: Date): number | undefined {
  const value = headers['retry-after']?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // A date names its month (Date.parse alone would read "2.5" as February 5th).
  const at = /[a-z]{3}/i.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  const sent = Date.parse(headers.date ?? '');
  return Math.max(0, at - (Number.isNaN(sent) ? now.getTime() : sent));
}

function transportError(spec: CallSpec<unknown>, err: unknown): SvcTransportError {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
    return new SvcTransportError(spec.endpoint, true, `no response within ${spec.timeoutMs} ms`, {
      cause: err,
    });
  }
  const code = (err as { cause?: { code?: string } })?.cause?.code;
  const reached = !(code && NOT_SENT_CODES.has(code));
  return new SvcTransportError(
    spec.endpoint,
    reached,
    `network error${code ? ` ${code}` : ''}${reached ? '' : ' (request not sent)'}`,
    { cause: err },
  );
}
