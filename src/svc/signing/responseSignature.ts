/**
 * Optional response signing of the Merchant Payments Service (spec: Authentication, "Optional
 * response signing"). When a store turns signed_response on, every response, errors included,
 * carries X-Response-Timestamp, X-Response-Nonce and X-Response-Signature over a seven-line
 * canonical string that binds the response to the request it answers (request nonce and request
 * body hash) as well as to its own status, timestamp, nonce and body.
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

/** Spec: clients cache response nonces at least 5 minutes. */
export const DEFAULT_RESPONSE_NONCE_TTL_SECONDS = 300;

export interface CanonicalResponseFields {
  /** HTTP status code of the response. */
  status: number;
  /** Path of the request answered (no query). */
  path: string;
  /** X-Nonce of the request answered. */
  requestNonce: string;
  /** Lowercase hex SHA-256 of the raw request body (of '' when there was none). */
  requestBodySha256: string;
  /** The X-Response-Timestamp value. */
  responseTimestamp: string | number;
  /** The X-Response-Nonce value. */
  responseNonce: string;
  /** Lowercase hex SHA-256 of the raw response body. */
  responseBodySha256: string;
}

/**
 * STATUS_CODE, PATH, REQUEST_NONCE, REQUEST_BODY_SHA256, RESPONSE_TIMESTAMP, RESPONSE_NONCE,
 * RESPONSE_BODY_SHA256, joined by '\n' (no trailing newline).
 */
export function canonicalResponseString(fields: CanonicalResponseFields): string {
  if (!Number.isInteger(fields.status)) {
    throw new TypeError(`canonical response: status must be an integer HTTP status, got ${fields.status}`);
  }
  return joinCanonicalLines([
    String(fields.status),
    fields.path,
    fields.requestNonce,
    fields.requestBodySha256,
    String(fields.responseTimestamp),
    fields.responseNonce,
    fields.responseBodySha256,
  ]);
}

/** A type alias (not an interface) so it can be passed where a HeaderBag is expected. */
export type ResponseSignatureHeaders = {
  'X-Response-Timestamp': string;
  'X-Response-Nonce': string;
  'X-Response-Signature': string;
};

/**
 * Signs a response (the simulator's side). `requestBody` and `responseBody` are the exact raw bytes
 * (omit requestBody when the request had none); the timestamp is the clock's Unix seconds and the
 * nonce a fresh UUID unless given. The caller also sends X-Request-Id (and, recommended, echoes the
 * request nonce as X-Request-Nonce).
 */
export function signResponse(args: {
  secret: string | Uint8Array;
  status: number;
  path: string;
  requestNonce: string;
  requestBody?: Uint8Array | string;
  responseBody: Uint8Array | string;
  clock: Clock;
  nonce?: string;
}): ResponseSignatureHeaders {
  const responseTimestamp = String(unixSeconds(args.clock));
  const responseNonce = args.nonce ?? randomUUID();
  const canonical = canonicalResponseString({
    status: args.status,
    path: args.path,
    requestNonce: args.requestNonce,
    requestBodySha256: sha256Hex(bodyBytes(args.requestBody)),
    responseTimestamp,
    responseNonce,
    responseBodySha256: sha256Hex(args.responseBody),
  });
  return {
    'X-Response-Timestamp': responseTimestamp,
    'X-Response-Nonce': responseNonce,
    'X-Response-Signature': hmacSignatureV1(args.secret, canonical),
  };
}

const RESPONSE_HEADER_NAMES = ['X-Response-Timestamp', 'X-Response-Nonce', 'X-Response-Signature'] as const;

/**
 * Verifies a signed response (the client's side). `requestNonce` and `requestBody` are what we
 * sent, taken from our own request, not from any echo header, so a response cannot be replayed as
 * the answer to another request. `responseBody` is the exact bytes received.
 *
 * Checks in order: the three X-Response-* headers present -> missing_header; timestamp an integer
 * within skew -> stale_timestamp; signature -> bad_signature; then the response nonce is claimed
 * -> nonce_reused (only for a valid signature, so forged responses cannot burn nonces).
 *
 * Nonce key: `response:<X-Response-Nonce>`. Response nonces are minted by the service, unique per
 * response across all stores, so one namespace for all responses is enough and the strictest. The
 * claim lasts at least `nonceTtlSeconds` (spec: cache at least 5 minutes), extended to cover the
 * rest of the timestamp's skew window.
 */
export async function verifyResponseSignature(args: {
  secret: string | Uint8Array;
  status: number;
  path: string;
  requestNonce: string;
  requestBody?: Uint8Array | string;
  responseBody: Uint8Array | string;
  headers: HeaderBag;
  clock: Clock;
  nonceStore: NonceStore;
  skewSeconds?: number;
  nonceTtlSeconds?: number;
}): Promise<SignatureVerification> {
  const skewSeconds = args.skewSeconds ?? DEFAULT_SKEW_SECONDS;
  const nonceTtlSeconds = args.nonceTtlSeconds ?? DEFAULT_RESPONSE_NONCE_TTL_SECONDS;

  const read = readRequiredHeaders(args.headers, RESPONSE_HEADER_NAMES);
  if (!read.ok) return { ok: false, reason: read.reason, header: read.header };
  const {
    'X-Response-Timestamp': timestampText,
    'X-Response-Nonce': responseNonce,
    'X-Response-Signature': signature,
  } = read.values;

  return checkSignedMessage({
    secret: args.secret,
    timestampText,
    signature,
    headerFields: [responseNonce],
    canonical: () =>
      canonicalResponseString({
        status: args.status,
        path: args.path,
        requestNonce: args.requestNonce,
        requestBodySha256: sha256Hex(bodyBytes(args.requestBody)),
        responseTimestamp: timestampText,
        responseNonce,
        responseBodySha256: sha256Hex(args.responseBody),
      }),
    nonceKey: `response:${responseNonce}`,
    clock: args.clock,
    nonceStore: args.nonceStore,
    skewSeconds,
    nonceTtlSeconds,
  });
}
