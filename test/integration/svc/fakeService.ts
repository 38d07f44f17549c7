/**
 * A scripted stand-in for the Merchant Payments Service: a real node:http server on 127.0.0.1 that
 * answers from a per-test queue of canned replies (or a per-test handler) and records every request
 * it received. It checks each request's signature itself, with node:crypto and the spec's six-line
 * canonical string, deliberately NOT through src/svc/signing, so a bug shared by the client's signer
 * and verifier cannot hide here. For signed_response stores it signs responses the same way (seven
 * lines). A request whose signature fails is answered 20001/20002 as the service would, and
 * stopFakeServices() (run it in afterEach) fails the test when any request was badly signed.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { expect } from 'vitest';
import { createSvcClient, type SvcClient, type SvcClientOptions } from '../../../src/svc/client.ts';

export const API_KEY = 'pk_store_7f3a';
/** Distinctive so that a leak into any error text is easy to find. */
export const API_SECRET = 'sk_TOP-SECRET-never-print-5e1d9c0b7a';
export const SKEW_SECONDS = 300;
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export const sha256Hex = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
export const hmacV1 = (canonical: string): string =>
  `v1=${createHmac('sha256', API_SECRET).update(canonical, 'utf8').digest('base64')}`;

export interface RecordedRequest {
  method: string;
  path: string;
  /** As sent, without '?'; '' when none. */
  query: string;
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  /** performance.now() when the whole request had arrived. */
  arrivedAt: number;
  nonce: string;
  timestamp: string;
  /** Why the signature check failed; empty when the request was correctly signed. */
  signatureProblems: string[];
}

export interface ResponseSigning {
  /** Send no X-Response-* headers at all. */
  omit?: boolean;
  /** Sign, then leave out this one header. */
  dropHeader?: 'X-Response-Timestamp' | 'X-Response-Nonce' | 'X-Response-Signature';
  /** Sign the body, then send different bytes. */
  tamperBody?: boolean;
  /** Use this response nonce instead of a fresh one (replay). */
  nonce?: string;
  /** Shift X-Response-Timestamp from now, in seconds. */
  timestampOffsetSeconds?: number;
  /** Sign as the answer to another request nonce. */
  requestNonce?: string;
}

export type Reply =
  | {
      kind: 'envelope';
      status: number;
      code: number;
      payload: unknown;
      error: { message: string; details: Record<string, unknown> } | null;
      requestId?: string;
      /** Answer only after this many ms. */
      delayMs?: number;
      signing?: ResponseSigning;
    }
  /** Bytes that are not a service envelope (a proxy's page), never signed; `headers` added as given. */
  | { kind: 'raw'; status: number; contentType: string; body: string; headers?: Record<string, string> }
  /** Read the whole request, then destroy the socket without a response. */
  | { kind: 'destroy' }
  /** Read the whole request and never answer. */
  | { kind: 'hang' };

type ReplyOptions = { requestId?: string; delayMs?: number; signing?: ResponseSigning; status?: number };
type EnvelopeReply = Extract<Reply, { kind: 'envelope' }>;

export const ok = (payload: unknown, opts: ReplyOptions = {}): EnvelopeReply => ({
  kind: 'envelope',
  status: opts.status ?? 200,
  code: 0,
  payload,
  error: null,
  ...opts,
});

export const apiError = (
  code: number,
  status: number,
  details: Record<string, unknown> = {},
  opts: ReplyOptions & { message?: string } = {},
): EnvelopeReply => ({
  kind: 'envelope',
  status,
  code,
  payload: null,
  error: { message: opts.message ?? `error ${code}`, details },
  ...(opts.requestId ? { requestId: opts.requestId } : {}),
  ...(opts.delayMs ? { delayMs: opts.delayMs } : {}),
  ...(opts.signing ? { signing: opts.signing } : {}),
});

export const destroy = (): Reply => ({ kind: 'destroy' });
export const hang = (): Reply => ({ kind: 'hang' });

export interface FakeService {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Appends replies, served in order. */
  script(...replies: Reply[]): void;
  /** Used once the queue is empty. */
  handler: ((req: RecordedRequest) => Reply) | undefined;
  close(): Promise<void>;
}

const live: FakeService[] = [];

export async function startFakeService(
  opts: { signResponses?: boolean; port?: number } = {},
): Promise<FakeService> {
  const queue: Reply[] = [];
  const requests: RecordedRequest[] = [];
  const seenNonces = new Set<string>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let served = 0;

  const send = (res: ServerResponse, req: RecordedRequest, reply: EnvelopeReply) => {
    if (res.destroyed || res.writableEnded) return;
    served += 1;
    const requestId = reply.requestId ?? `req_${served}`;
    const body = JSON.stringify({
      code: reply.code,
      payload: reply.payload,
      error: reply.error,
      request_id: requestId,
    });
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    const signing = reply.signing ?? {};
    if (opts.signResponses && !signing.omit) {
      const ts = String(Math.floor(Date.now() / 1000) + (signing.timestampOffsetSeconds ?? 0));
      const responseNonce = signing.nonce ?? randomUUID();
      const canonical = [
        String(reply.status),
        req.path,
        signing.requestNonce ?? req.nonce,
        sha256Hex(req.rawBody),
        ts,
        responseNonce,
        sha256Hex(body),
      ].join('\n');
      Object.assign(headers, {
        'X-Response-Timestamp': ts,
        'X-Response-Nonce': responseNonce,
        'X-Response-Signature': hmacV1(canonical),
        'X-Request-Nonce': req.nonce,
        'X-Request-Id': requestId,
      });
      if (signing.dropHeader) delete headers[signing.dropHeader];
    }
    res.writeHead(reply.status, headers);
    res.end(signing.tamperBody ? body.replace('}', ',"injected":true}') : body);
  };

  const server = createServer((httpReq, res) => {
    const chunks: Buffer[] = [];
    httpReq.on('data', (c: Buffer) => chunks.push(c));
    httpReq.on('end', () => {
      const rawUrl = httpReq.url ?? '/';
      const q = rawUrl.indexOf('?');
      const rawBody = Buffer.concat(chunks);
      const h = httpReq.headers;
      const one = (name: string) => (typeof h[name] === 'string' ? (h[name] as string) : '');
      const req: RecordedRequest = {
        method: httpReq.method ?? '',
        path: q === -1 ? rawUrl : rawUrl.slice(0, q),
        query: q === -1 ? '' : rawUrl.slice(q + 1),
        headers: h,
        rawBody,
        arrivedAt: performance.now(),
        nonce: one('x-nonce'),
        timestamp: one('x-timestamp'),
        signatureProblems: [],
      };
      req.signatureProblems = checkSignature(req, seenNonces);
      requests.push(req);

      if (req.signatureProblems.length > 0) {
        const missing = req.signatureProblems.some((p) => p.startsWith('missing'));
        send(res, req, apiError(missing ? 20001 : 20002, 401, { reason: req.signatureProblems.join('; ') }));
        return;
      }
      const reply: Reply =
        queue.shift() ??
        service.handler?.(req) ??
        apiError(99999, 500, {}, { message: 'fake service: no reply scripted for this request' });
      if (reply.kind === 'destroy') {
        httpReq.socket.destroy();
      } else if (reply.kind === 'raw') {
        res.writeHead(reply.status, { ...reply.headers, 'Content-Type': reply.contentType });
        res.end(reply.body);
      } else if (reply.kind === 'envelope') {
        if (reply.delayMs) {
          const t = setTimeout(() => {
            timers.delete(t);
            send(res, req, reply);
          }, reply.delayMs);
          timers.add(t);
        } else send(res, req, reply);
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  const service: FakeService = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    script: (...replies) => queue.push(...replies),
    handler: undefined,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  live.push(service);
  return service;
}

/** The request checks of the spec, done here from first principles. */
function checkSignature(req: RecordedRequest, seenNonces: Set<string>): string[] {
  const problems: string[] = [];
  const header = (name: string) => req.headers[name.toLowerCase()];
  for (const name of ['X-API-Key', 'X-Timestamp', 'X-Nonce', 'X-Signature']) {
    if (typeof header(name) !== 'string' || header(name) === '') problems.push(`missing ${name}`);
  }
  if (problems.length > 0) return problems;
  if (header('X-API-Key') !== API_KEY) problems.push('wrong X-API-Key');
  if (!/^\d+$/.test(req.timestamp) || Math.abs(Number(req.timestamp) - Date.now() / 1000) > SKEW_SECONDS) {
    problems.push(`X-Timestamp ${req.timestamp} not within ${SKEW_SECONDS} s`);
  }
  if (seenNonces.has(req.nonce)) problems.push(`X-Nonce ${req.nonce} reused`);
  seenNonces.add(req.nonce);
  const canonical = [req.method, req.path, req.query, req.timestamp, req.nonce, sha256Hex(req.rawBody)].join(
    '\n',
  );
  if (header('X-Signature') !== hmacV1(canonical)) problems.push('X-Signature does not match');
  return problems;
}

/**
 * Asserts one recorded request is what the client should have sent, signed per the spec: the four
 * headers, a current timestamp, a UUID nonce, and v1= HMAC over the six-line canonical string whose
 * body line hashes exactly `body` (the bytes we expected on the wire, which must also be what arrived).
 */
export function expectSignedRequest(
  req: RecordedRequest | undefined,
  expected: { method: 'GET' | 'POST'; path: string; body: string },
): void {
  expect(req).toBeDefined();
  if (!req) return;
  expect(req.method).toBe(expected.method);
  expect(req.path).toBe(expected.path);
  expect(req.query).toBe('');
  expect(req.rawBody.equals(Buffer.from(expected.body, 'utf8'))).toBe(true);
  expect(req.headers['x-api-key']).toBe(API_KEY);
  expect(req.timestamp).toMatch(/^\d+$/);
  expect(Math.abs(Number(req.timestamp) - Date.now() / 1000)).toBeLessThanOrEqual(5);
  expect(req.nonce).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  const canonical = [
    expected.method,
    expected.path,
    '',
    req.timestamp,
    req.nonce,
    sha256Hex(Buffer.from(expected.body, 'utf8')),
  ].join('\n');
  expect(req.headers['x-signature']).toBe(hmacV1(canonical));
  expect(req.signatureProblems).toEqual([]);
}

/** Run in afterEach: closes every service started in the test, then checks all requests were signed. */
export async function stopFakeServices(): Promise<void> {
  const services = live.splice(0);
  await Promise.all(services.map((s) => s.close()));
  const bad = services.flatMap((s) =>
    s.requests
      .filter((r) => r.signatureProblems.length > 0)
      .map((r) => `${r.method} ${r.path}: ${r.signatureProblems.join(', ')}`),
  );
  if (bad.length > 0) throw new Error(`fake service received badly signed requests:\n${bad.join('\n')}`);
}

/** A URL on which nothing listens (a port just released), for ECONNREFUSED. */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** An injected sleep that records the delays asked for and returns at once. */
export function recordingSleep(onSleep?: (ms: number) => void | Promise<void>) {
  const delays: number[] = [];
  const sleep = async (ms: number) => {
    delays.push(ms);
    await onSleep?.(ms);
  };
  return { delays, sleep };
}

/** A deterministic `random`: returns the given values in turn, then repeats the last. */
export function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)] ?? 0;
}

export function makeClient(
  target: { url: string },
  overrides: Partial<Omit<SvcClientOptions, 'credentials'>> & { signedResponse?: boolean } = {},
): SvcClient {
  const { signedResponse = false, ...rest } = overrides;
  return createSvcClient({
    baseUrl: target.url,
    credentials: { apiKey: API_KEY, apiSecret: API_SECRET, signedResponse },
    sleep: async () => {},
    ...rest,
  });
}

const thrown: unknown[] = [];

/** Awaits a call expected to reject; returns the error and keeps it for the secrets check. */
export async function rejectionOf(call: Promise<unknown>): Promise<Error> {
  try {
    await call;
  } catch (err) {
    thrown.push(err);
    if (!(err instanceof Error)) throw new Error(`rejected with a non-Error: ${String(err)}`);
    return err;
  }
  throw new Error('expected the call to reject, but it resolved');
}

/** Every text of every error collected so far in this test file: message, stack, causes. */
export function collectedErrorTexts(): string[] {
  const texts: string[] = [];
  const walk = (e: unknown, depth: number) => {
    if (depth > 5 || e === undefined || e === null) return;
    if (e instanceof Error) {
      texts.push(e.message, e.stack ?? '', String(e));
      walk(e.cause, depth + 1);
    } else texts.push(String(e));
  };
  for (const e of thrown) walk(e, 0);
  return texts;
}

// ---------------------------------------------------------------------------------------------
// Payloads shaped as the spec shows them.

export const INTENT_ID = '665f1c2e9b1d4a0012345678';
export const CLAIM_LINK_ID = 'cl_01HZX3K9Q';
export const REFERENCE_ID = 'payout-2024-0001';

/** Full intent as the spec's success example has it: error_message and tx_hash_2 absent. */
export const checkoutIntentPayload = {
  all_svc_checkout_intent_id: INTENT_ID,
  currency: 1,
  currency_symbol: 'USD',
  amount_cents: 1999,
  chain_id: 8453,
  amount_coins: '19.99',
  coin_symbol: 'USDC',
  coin_contract: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  currency_rate: '1.0000',
  status: 20,
  order_id: 'order-1001',
  order_description: 'Two mugs',
  user_id: 'u-42',
  user_name: 'Ada',
  tx_hash: `0x${'ab'.repeat(32)}`,
  tx_from: `0x${'11'.repeat(20)}`,
  tx_to: `0x${'22'.repeat(20)}`,
  actual_paid_amount: '19.99',
  service_fee_amount: '0.20',
  net_income_amount: '19.79',
  payment_method_type: 2,
  accepted_stable_coins: 2,
};

export const createIntentResultPayload = {
  checkout_url: `https://pay.example.test/checkout/${INTENT_ID}`,
  allsvc_checkout_intent_id: INTENT_ID,
  amount_coins: '19.99',
  stable_coin_type: 2,
  rate: '1.0000',
  accepted_stable_coins: 2,
};

export const claimLinkRequest = {
  amount: '25.50',
  stable_coin: 1 as const,
  chain: 5 as const,
  receiver_email: 'recipient@example.test',
  sender_message: 'Thanks for the help',
  reference_id: REFERENCE_ID,
};

export const claimLinkResultPayload = {
  claim_link_id: CLAIM_LINK_ID,
  reference_id: REFERENCE_ID,
  amount: '25.50',
  token_symbol: 'USDT',
  chain_id: 8453,
  status: 'pending_deposit',
  token: 'clt_bearer_token_xyz',
  claim_url: 'https://claim.example.test/c/clt_bearer_token_xyz',
  funding_tx_hash: `0x${'cd'.repeat(32)}`,
  funded_amount: '25.50',
  idempotent_hit: false,
};

export const cancelResultPayload = {
  claim_link_id: CLAIM_LINK_ID,
  reference_id: REFERENCE_ID,
  status: 'cancelled',
  refund_status: 'refund_pending',
};
