import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.ts';
import { stringifyJson } from '../svc/json.ts';
import { readHeader } from '../svc/signing/requestSignature.ts';
import { signResponse } from '../svc/signing/responseSignature.ts';
import type { SandboxStore } from './sandboxConfig.ts';

/** The service's response envelope. */
export interface EnvelopeBody {
  code: number;
  payload: unknown;
  error: { message: string; details: Record<string, unknown> } | null;
  request_id: string;
}

/**
 * Sends an envelope as exact bytes, signed when the store has signed_response on (errors too, as
 * the spec says). The store is the one X-API-Key names, whether or not the request then passes
 * authentication; with no key, or a key of no store, there is nothing to sign with. A request
 * without X-Nonce is signed over an empty REQUEST_NONCE and gets no X-Request-Nonce echo.
 */
export function sendEnvelope(
  req: FastifyRequest,
  reply: FastifyReply,
  args: {
    clock: Clock;
    store: SandboxStore | undefined;
    httpStatus: number;
    code: number;
    payload?: unknown;
    message?: string;
    details?: Record<string, unknown>;
  },
): FastifyReply {
  const requestId = randomUUID();
  const body: EnvelopeBody = {
    code: args.code,
    payload: args.code === 0 ? (args.payload ?? null) : null,
    error: args.code === 0 ? null : { message: args.message ?? 'error', details: args.details ?? {} },
    request_id: requestId,
  };
  // bigint amounts (amount_cents) go out as exact JSON integers.
  const bytes = stringifyJson(body);
  reply.code(args.httpStatus).type('application/json');
  if (args.store?.signed_response) {
    const sentNonce = readHeader(req.headers, 'X-Nonce');
    const requestNonce = sentNonce ?? '';
    const headers = signResponse({
      secret: args.store.api_secret,
      status: args.httpStatus,
      path: new URL(req.url, 'http://sandbox').pathname,
      requestNonce,
      requestBody: rawBody(req),
      responseBody: bytes,
      clock: args.clock,
    });
    reply.headers({
      ...headers,
      ...(sentNonce === undefined ? {} : { 'X-Request-Nonce': sentNonce }),
      'X-Request-Id': requestId,
    });
  }
  return reply.send(bytes);
}

/** The exact request bytes (the server keeps bodies as Buffers; see server.ts). */
export function rawBody(req: FastifyRequest): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}
