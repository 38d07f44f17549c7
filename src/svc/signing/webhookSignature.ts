/**
 * Webhook authentication of the Merchant Payments Service (spec: Authentication, "Webhook
 * authentication"). The service POSTs events signed with the store's api_secret over an
 * eight-line canonical string whose first line is the literal `allsvc:webhook:v1`. The receiver
 * verifies before parsing the body, then uses X-Webhook-Id for idempotency (not done here).
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.ts';
import { unixSeconds } from '../../clock.ts';
import { hmacSignatureV1 } from './hmac.ts';
import type { NonceStore } from './nonceStore.ts';
import type { HeaderBag, SignatureVerification } from './requestSignature.ts';
import {
  bodyBytes,
  checkSignedMessage,
  DEFAULT_SKEW_SECONDS,
  joinCanonicalLines,
  readRequiredHeaders,
} from './requestSignature.ts';
import { sha256Hex } from './sha256Hex.ts';

/** First line of every webhook canonical string (the spec's brand token replaced by svc). */
export const WEBHOOK_CANONICAL_PREFIX = 'allsvc:webhook:v1';

/** Spec: recommended webhook nonce cache lifetime. */
export const DEFAULT_WEBHOOK_NONCE_TTL_SECONDS = 600;

export interface CanonicalWebhookFields {
  /** HTTP method of the delivery (POST); uppercased here. */
  method: string;
  /** URL path only, as sent. */
  path: string;
  /** Query string as sent, without the '?'; '' when none. */
  query: string;
  /** The X-Webhook-Id value. */
  webhookId: string;
  /** The X-Webhook-Timestamp value. */
  timestamp: string | number;
  /** The X-Webhook-Nonce value. */
  nonce: string;
  /** Lowercase hex SHA-256 of the raw body bytes, before any parsing. */
  bodySha256: string;
}

/**
 * `allsvc:webhook:v1`, METHOD, PATH, QUERY_STRING, WEBHOOK_ID, TIMESTAMP, NONCE, BODY_SHA256,
 * joined by '\n' (no trailing newline).
 */
export function canonicalWebhookString(fields: CanonicalWebhookFields): string {
  if (fields.query.startsWith('?')) {
    throw new TypeError(`canonical webhook: query must be given without the leading '?': ${fields.query}`);
  }
  return joinCanonicalLines([
    WEBHOOK_CANONICAL_PREFIX,
    fields.method.toUpperCase(),
    fields.path,
    fields.query,
    fields.webhookId,
    String(fields.timestamp),
    fields.nonce,
    fields.bodySha256,
  ]);
}

/** A type alias (not an interface) so it can be passed where a HeaderBag is expected. */
export type WebhookSignatureHeaders = {
  'X-Webhook-Id': string;
  'X-Webhook-Timestamp': string;
  'X-Webhook-Nonce': string;
  'X-Webhook-Signature': string;
};

/**
 * Signs a webhook delivery (the simulator's side). `body` is the exact bytes to be POSTed; the
 * timestamp is the clock's Unix seconds and the nonce a fresh UUID unless given. The caller adds
 * X-API-Key and Content-Type.
 */
export function signWebhook(args: {
  secret: string | Uint8Array;
  method: string;
  path: string;
  query?: string;
  webhookId: string;
  body: Uint8Array | string;
  clock: Clock;
  nonce?: string;
}): WebhookSignatureHeaders {
  const timestamp = String(unixSeconds(args.clock));
  const nonce = args.nonce ?? randomUUID();
  const canonical = canonicalWebhookString({
    method: args.method,
    path: args.path,
    query: args.query ?? '',
    webhookId: args.webhookId,
    timestamp,
    nonce,
    bodySha256: sha256Hex(args.body),
  });
  return {
    'X-Webhook-Id': args.webhookId,
    'X-Webhook-Timestamp': timestamp,
    'X-Webhook-Nonce': nonce,
    'X-Webhook-Signature': hmacSignatureV1(args.secret, canonical),
  };
}

const WEBHOOK_HEADER_NAMES = [
  'X-Webhook-Id',
  'X-Webhook-Timestamp',
  'X-Webhook-Nonce',
  'X-Webhook-Signature',
] as const;

/**
 * Verifies a received webhook (our side). `method`, `path` and `query` are those of the request as
 * it reached us; `rawBody` the exact bytes received, before JSON parsing.
 *
 * Checks in order: X-Webhook-Id, -Timestamp, -Nonce, -Signature present -> missing_header;
 * timestamp an integer within skew -> stale_timestamp; signature -> bad_signature; then the nonce
 * is claimed -> nonce_reused (only for a valid signature, so forgeries cannot burn nonces).
 * X-API-Key is not required here: it is not signed, and the caller picks `secret` by its own route
 * or configuration.
 *
 * Nonce key: `webhook:<X-Webhook-Nonce>`, one namespace for all webhooks. Not namespaced by
 * X-API-Key, because that header is outside the signature and an attacker could change it to
 * replay a delivery under a fresh key; not by X-Webhook-Id either, because then one nonce could be
 * reused under a new id, and the spec says a nonce is used once. Nonces are minted by the service,
 * unique per delivery, so a shared namespace costs nothing. Retries of one event carry the same
 * X-Webhook-Id with a new nonce and pass here; deduplicating them by id is the caller's job. The
 * claim lasts at least `nonceTtlSeconds` (600 s recommended), extended to cover the rest of the
 * timestamp's skew window.
 */
export async function verifyWebhookSignature(args: {
  secret: string | Uint8Array;
  method: string;
  path: string;
  query?: string;
  rawBody: Uint8Array | string;
  headers: HeaderBag;
  clock: Clock;
  nonceStore: NonceStore;
  skewSeconds?: number;
  nonceTtlSeconds?: number;
}): Promise<SignatureVerification> {
  const skewSeconds = args.skewSeconds ?? DEFAULT_SKEW_SECONDS;
  const nonceTtlSeconds = args.nonceTtlSeconds ?? DEFAULT_WEBHOOK_NONCE_TTL_SECONDS;

  const read = readRequiredHeaders(args.headers, WEBHOOK_HEADER_NAMES);
  if (!read.ok) return { ok: false, reason: read.reason, header: read.header };
  const {
    'X-Webhook-Id': webhookId,
    'X-Webhook-Timestamp': timestampText,
    'X-Webhook-Nonce': nonce,
    'X-Webhook-Signature': signature,
  } = read.values;

  return checkSignedMessage({
    secret: args.secret,
    timestampText,
    signature,
    headerFields: [webhookId, nonce],
    canonical: () =>
      canonicalWebhookString({
        method: args.method,
        path: args.path,
        query: args.query ?? '',
        webhookId,
        timestamp: timestampText,
        nonce,
        bodySha256: sha256Hex(bodyBytes(args.rawBody)),
      }),
    nonceKey: `webhook:${nonce}`,
    clock: args.clock,
    nonceStore: args.nonceStore,
    skewSeconds,
    nonceTtlSeconds,
  });
}
