/**
 * Request signing of the Merchant Payments Service (spec: Authentication, "Canonical request
 * string" and "Verification rules").
 *
 * Glossary
 * - canonical string: the newline-joined lines that are signed; the exact line list differs for
 *   requests (6 lines), responses (7) and webhooks (8).
 * - raw body: the exact bytes that travelled on the wire. Every BODY_SHA256 line hashes these bytes,
 *   never a re-serialised (parsed then stringified) body.
 * - skew: how far a signed timestamp may be from our clock, either way (300 s in the spec).
 * - nonce: a unique string per message; a verifier claims it in a NonceStore so a replay is refused.
 *
 * This module also holds the pieces that responseSignature.ts and webhookSignature.ts share with it
 * (result type, header lookup, timestamp window, nonce lifetime), because the request scheme is the
 * base the other two vary.
 */
import type { Clock } from '../../clock.ts';
import { unixSeconds } from '../../clock.ts';
import { hmacSignatureV1, signaturesEqual } from './hmac.ts';
import type { NonceStore } from './nonceStore.ts';
import { sha256Hex } from './sha256Hex.ts';

// ---------------------------------------------------------------------------------------------
// Shared by request, response and webhook verification.

/** Why a signed message was refused. Maps onto the service's codes: missing_header is 20001, the rest 20002. */
export type SignatureFailureReason = 'missing_header' | 'bad_signature' | 'stale_timestamp' | 'nonce_reused';

/** Outcome of a verification; `header` names the absent header when reason is missing_header. */
export type SignatureVerification =
  | { ok: true }
  | { ok: false; reason: SignatureFailureReason; header?: string };

/** Headers as Node and Fastify present them: any case, a value, repeated values, or absent. */
export type HeaderBag = Record<string, string | string[] | undefined>;

/** Spec: a signed timestamp must be within plus or minus 5 minutes of server time. */
export const DEFAULT_SKEW_SECONDS = 300;

/**
 * The single value of a header, looked up case-insensitively. Returns undefined when the header is
 * absent, empty, or given more than once (several keys differing only in case, or an array of more
 * than one value): a signing header with two values is ambiguous, so it counts as missing.
 */
export function readHeader(headers: HeaderBag, name: string): string | undefined {
  // On the intake's hot path (several lookups per webhook): no allocation, and a key is
  // lowercased only when its length matches.
  const wanted = name.toLowerCase();
  let only: string | undefined;
  let count = 0;
  for (const key in headers) {
    if (key.length !== wanted.length || key.toLowerCase() !== wanted) continue;
    const value = headers[key];
    if (value === undefined) continue;
    if (typeof value === 'string') {
      only = value;
      count += 1;
    } else {
      only = value[0];
      count += value.length;
    }
  }
  if (count !== 1 || only === undefined || only === '') return undefined;
  return only;
}

/**
 * Reads every named header, in order; the first one absent gives a missing_header result naming it.
 */
export function readRequiredHeaders<const N extends string>(
  headers: HeaderBag,
  names: readonly N[],
): { ok: true; values: Record<N, string> } | { ok: false; reason: 'missing_header'; header: N } {
  const values = {} as Record<N, string>;
  for (const name of names) {
    const value = readHeader(headers, name);
    if (value === undefined) return { ok: false, reason: 'missing_header', header: name };
    values[name] = value;
  }
  return { ok: true, values };
}

/**
 * A timestamp header as whole Unix seconds, or undefined when it is not a plain non-negative
 * integer (digits only: no sign, decimal point, exponent or spaces). The signature covers the
 * header text as sent, so the text itself is what goes into the canonical string.
 */
export function parseUnixSeconds(value: string): number | undefined {
  if (!/^[0-9]{1,15}$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** True when `timestamp` is within `skewSeconds` of the clock, either way (the bound itself included). */
export function timestampWithinSkew(timestamp: number, clock: Clock, skewSeconds: number): boolean {
  return Math.abs(unixSeconds(clock) - timestamp) <= skewSeconds;
}

/**
 * How long to hold a claimed nonce: at least `nonceTtlSeconds`, and never less than the time the
 * message's timestamp still passes the skew check (timestamp + skew - now, at most 2 x skew), so a
 * replay cannot succeed just after the nonce is forgotten while the timestamp is still acceptable.
 */
export function nonceLifetimeSeconds(args: {
  timestamp: number;
  clock: Clock;
  skewSeconds: number;
  nonceTtlSeconds: number;
}): number {
  // +1: the clock is read in whole seconds (floored), so the timestamp keeps passing the check
  // for up to a second beyond what the difference says.
  const stillValidFor = args.timestamp + args.skewSeconds - unixSeconds(args.clock) + 1;
  return Math.max(args.nonceTtlSeconds, stillValidFor);
}

/**
 * Joins canonical lines with '\n'. A field holding a newline would shift the lines and make two
 * different messages sign the same string, so it is refused with a TypeError (a caller bug;
 * verifiers screen header-borne fields first and answer bad_signature instead).
 */
export function joinCanonicalLines(fields: readonly string[]): string {
  for (const field of fields) {
    if (field.includes('\n') || field.includes('\r')) {
      throw new TypeError(`canonical string: field ${JSON.stringify(field)} contains a line break`);
    }
  }
  return fields.join('\n');
}

/** True when a value taken from a header can go into a canonical string (no line break). */
export function isSingleLine(value: string): boolean {
  return !value.includes('\n') && !value.includes('\r');
}

/** Raw body bytes, or the empty body when there is none. A string is taken as its UTF-8 bytes. */
export function bodyBytes(body: Uint8Array | string | undefined): Uint8Array | string {
  return body ?? '';
}

/**
 * The checks every signed message shares once its headers are read, in this order: the timestamp
 * within skew (stale_timestamp); header-borne canonical fields free of line breaks and the
 * signature over the canonical string, compared timing-safely (bad_signature); only then the
 * nonce claimed (nonce_reused), so a forgery cannot burn a nonce.
 */
export async function checkSignedMessage(args: {
  secret: string | Uint8Array;
  timestampText: string;
  signature: string;
  /** Values from headers that go into the canonical string (nonce, webhook id). */
  headerFields: readonly string[];
  /** Built only once the fields are known to be single lines. */
  canonical: () => string;
  nonceKey: string;
  clock: Clock;
  nonceStore: NonceStore;
  skewSeconds: number;
  nonceTtlSeconds: number;
}): Promise<SignatureVerification> {
  const timestamp = parseUnixSeconds(args.timestampText);
  if (timestamp === undefined || !timestampWithinSkew(timestamp, args.clock, args.skewSeconds)) {
    return { ok: false, reason: 'stale_timestamp' };
  }
  if (!args.headerFields.every(isSingleLine)) return { ok: false, reason: 'bad_signature' };
  if (!signaturesEqual(args.signature, hmacSignatureV1(args.secret, args.canonical()))) {
    return { ok: false, reason: 'bad_signature' };
  }
  const ttl = nonceLifetimeSeconds({
    timestamp,
    clock: args.clock,
    skewSeconds: args.skewSeconds,
    nonceTtlSeconds: args.nonceTtlSeconds,
  });
  if (!(await args.nonceStore.claim(args.nonceKey, ttl))) return { ok: false, reason: 'nonce_reused' };
  return { ok: true };
}

// ---------------------------------------------------------------------------------------------
// Requests.

export interface CanonicalRequestFields {
  /** HTTP method; uppercased here. */
  method: string;
  /** URL path as sent, without query (not percent-decoded). */
  path: string;
  /** Query string exactly as sent, order preserved, without the leading '?'; '' when none. */
  query: string;
  /** The X-Timestamp value. */
  timestamp: string | number;
  /** The X-Nonce value. */
  nonce: string;
  /** Lowercase hex SHA-256 of the raw request body (of the empty string when there is no body). */
  bodySha256: string;
}

/** METHOD, PATH, QUERY_STRING, TIMESTAMP, NONCE, BODY_SHA256, joined by '\n' (no trailing newline). */
export function canonicalRequestString(fields: CanonicalRequestFields): string {
  if (fields.query.startsWith('?')) {
    throw new TypeError(`canonical request: query must be given without the leading '?': ${fields.query}`);
  }
  return joinCanonicalLines([
    fields.method.toUpperCase(),
    fields.path,
    fields.query,
    String(fields.timestamp),
    fields.nonce,
    fields.bodySha256,
  ]);
}

/** A type alias (not an interface) so it can be passed where a HeaderBag is expected. */
export type RequestSignatureHeaders = {
  'X-Timestamp': string;
  'X-Nonce': string;
  'X-Signature': string;
};

/**
 * Signs an outgoing request. `body` must be the exact bytes that will be sent (omit or '' when
 * there is none); `timestamp` is whole Unix seconds, e.g. `unixSeconds(clock)`; `nonce` a fresh
 * UUID. The caller adds X-API-Key itself.
 */
export function signRequest(args: {
  secret: string | Uint8Array;
  method: string;
  path: string;
  query?: string;
  body?: Uint8Array | string;
  timestamp: number;
  nonce: string;
}): { headers: RequestSignatureHeaders; bodySha256: string } {
  if (!Number.isSafeInteger(args.timestamp) || args.timestamp < 0) {
    throw new TypeError(`signRequest: timestamp must be whole Unix seconds, got ${args.timestamp}`);
  }
  const bodySha256 = sha256Hex(bodyBytes(args.body));
  const timestamp = String(args.timestamp);
  const canonical = canonicalRequestString({
    method: args.method,
    path: args.path,
    query: args.query ?? '',
    timestamp,
    nonce: args.nonce,
    bodySha256,
  });
  return {
    headers: {
      'X-Timestamp': timestamp,
      'X-Nonce': args.nonce,
      'X-Signature': hmacSignatureV1(args.secret, canonical),
    },
    bodySha256,
  };
}

const REQUEST_HEADER_NAMES = ['X-API-Key', 'X-Timestamp', 'X-Nonce', 'X-Signature'] as const;

/**
 * Verifies a signed request (our simulator's side of the spec). Checks, in this order:
 * 1. every signing header is present (X-API-Key, X-Timestamp, X-Nonce, X-Signature) -> missing_header;
 * 2. X-Timestamp is an integer within `skewSeconds` of the clock -> stale_timestamp;
 * 3. X-Signature matches, compared timing-safely -> bad_signature;
 * 4. only then the nonce is claimed -> nonce_reused. A request with a bad signature never reaches
 *    the store, so an attacker cannot burn nonces a legitimate client is about to use.
 *
 * `rawBody` must be the exact bytes received (a Buffer), not a re-serialised body.
 *
 * Nonce key: `request:<X-API-Key>:<X-Nonce>`. Nonces are unique per client, so they are namespaced
 * by API key. The API key is not in the canonical string, but the caller looks `secret` up by that
 * key, so a replay presented under another key fails the signature check before the store is asked.
 * The claim lasts `nonceTtlSeconds` (default 2 x skew: the whole window in which the timestamp passes).
 */
export async function verifyRequestSignature(args: {
  secret: string | Uint8Array;
  method: string;
  path: string;
  query?: string;
  rawBody?: Uint8Array | string;
  headers: HeaderBag;
  clock: Clock;
  nonceStore: NonceStore;
  skewSeconds?: number;
  nonceTtlSeconds?: number;
}): Promise<SignatureVerification> {
  const skewSeconds = args.skewSeconds ?? DEFAULT_SKEW_SECONDS;
  const nonceTtlSeconds = args.nonceTtlSeconds ?? 2 * skewSeconds;

  const read = readRequiredHeaders(args.headers, REQUEST_HEADER_NAMES);
  if (!read.ok) return { ok: false, reason: read.reason, header: read.header };
  const {
    'X-API-Key': apiKey,
    'X-Timestamp': timestampText,
    'X-Nonce': nonce,
    'X-Signature': signature,
  } = read.values;

  return checkSignedMessage({
    secret: args.secret,
    timestampText,
    signature,
    headerFields: [nonce],
    canonical: () =>
      canonicalRequestString({
        method: args.method,
        path: args.path,
        query: args.query ?? '',
        timestamp: timestampText,
        nonce,
        bodySha256: sha256Hex(bodyBytes(args.rawBody)),
      }),
    nonceKey: `request:${apiKey}:${nonce}`,
    clock: args.clock,
    nonceStore: args.nonceStore,
    skewSeconds,
    nonceTtlSeconds,
  });
}
