import type { Clock } from '../clock.ts';
import type { StoreConfig } from '../config/stores.ts';
import type { IntakeErrorReason } from '../metrics/knownLabels.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { type HeaderBag, readHeader } from '../svc/signing/requestSignature.ts';
import { verifyWebhookSignature } from '../svc/signing/webhookSignature.ts';
import type { InboxWriter } from './inboxWriter.ts';

/**
 * Webhook intake (docs/architecture.md, "The webhook path"): verify, store durably, enqueue, answer. A webhook is
 * answered 200 only once it is stored (or was already: same webhook_id); 401 for a failed
 * signature, timestamp or nonce check with the reason; 400 for a body that is not JSON (stored
 * as rejected, for audit). Storing goes through the inbox writer (src/intake/inboxWriter.ts):
 * the nonce claim and inbox row are written together, in one statement shared with the other
 * webhooks of the same moment, so many webhooks cost one commit; the writer adds the jobs after
 * that commit and, if Redis is down, the sweeper adds them later.
 */
export type WebhookEndpoint = 'checkout' | 'claim-links';

export interface IntakeRequest {
  endpoint: WebhookEndpoint;
  method: string;
  /** URL path and query exactly as received (the signature covers them). */
  path: string;
  query: string;
  headers: HeaderBag;
  rawBody: Buffer;
}

export interface IntakeAnswer {
  status: 200 | 400 | 401 | 503;
  body: { ok: boolean; reason?: string; duplicate?: boolean };
  /** With 503: when to try again (the Retry-After header). */
  retryAfterSeconds?: number;
}

/** What a 503 asks the sender to wait: about as long as a PostgreSQL restart or failover. */
export const INTAKE_RETRY_AFTER_SECONDS = 10;

export interface IntakeDeps {
  clock: Clock;
  /** Stores by api_key. */
  storesByKey: Map<string, StoreConfig>;
  /** Stores verified webhooks (nonce claim and inbox row) and enqueues their jobs. */
  inbox: Pick<InboxWriter, 'store' | 'waiting'>;
  /** Webhooks the inbox may hold waiting for storage; beyond that the answer is 503 (INTAKE_QUEUE_LIMIT). */
  queueLimit: number;
  metrics: Metrics;
}

export async function receiveWebhook(deps: IntakeDeps, req: IntakeRequest): Promise<IntakeAnswer> {
  const reject = (status: 400 | 401, reason: string): IntakeAnswer => {
    deps.metrics.webhooksRejected.inc({ endpoint: req.endpoint, reason });
    return { status, body: { ok: false, reason } };
  };
  // 503 (the sender retries later) rather than 500: nothing was stored, and nothing is wrong with
  // the webhook. Counted by reason, for the WebhookIntakeErrors alert.
  const unavailable = (reason: Exclude<IntakeErrorReason, 'internal'>, text: string): IntakeAnswer => {
    deps.metrics.webhookIntakeErrors.inc({ endpoint: req.endpoint, reason });
    return {
      status: 503,
      body: { ok: false, reason: `${reason}: ${text}` },
      retryAfterSeconds: INTAKE_RETRY_AFTER_SECONDS,
    };
  };
  // Checked first, so an intake whose database is away sheds load before spending CPU on it and
  // holds at most queueLimit webhooks in memory.
  if (deps.inbox.waiting() >= deps.queueLimit)
    return unavailable('queue_full', 'too many webhooks waiting to be stored; retry later');
  const apiKey = readHeader(req.headers, 'X-API-Key');
  if (!apiKey) return reject(401, 'missing_header: X-API-Key');
  const store = deps.storesByKey.get(apiKey);
  if (!store) return reject(401, 'unknown_api_key');

  // The nonce is claimed by the inbox writer together with the inbox row; verification only
  // tells us which nonce and for how long.
  let claim: { key: string; ttlSeconds: number } | undefined;
  const verdict = await verifyWebhookSignature({
    secret: store.apiSecret,
    method: req.method,
    path: req.path,
    query: req.query,
    rawBody: req.rawBody,
    headers: req.headers,
    clock: deps.clock,
    nonceStore: {
      claim: async (key, ttlSeconds) => {
        claim = { key, ttlSeconds };
        return true;
      },
    },
  });
  if (!verdict.ok || !claim) {
    const reason = verdict.ok
      ? 'bad_signature'
      : verdict.header
        ? `${verdict.reason}: ${verdict.header}`
        : verdict.reason;
    return reject(401, reason);
  }

  const webhookId = readHeader(req.headers, 'X-Webhook-Id') ?? '';
  let json = true;
  try {
    JSON.parse(req.rawBody.toString('utf8'));
  } catch {
    json = false;
  }
  let outcome: Awaited<ReturnType<IntakeDeps['inbox']['store']>>;
  try {
    outcome = await deps.inbox.store({
      storeId: store.storeId,
      endpoint: req.endpoint,
      webhookId,
      nonceKey: claim.key,
      nonceTtlSeconds: claim.ttlSeconds,
      // JSON.stringify leaves out headers whose value is undefined.
      headersJson: JSON.stringify(req.headers),
      body: req.rawBody,
      json,
    });
  } catch {
    // The inbox writer logged the database's error code; whether a dropped connection committed
    // is unknown, and the webhook_id makes the sender's retry idempotent either way.
    return unavailable('store_unavailable', 'the webhook could not be stored; retry later');
  }
  if (outcome === 'nonce_reused') return reject(401, 'nonce_reused');
  if (!json) return reject(400, 'malformed_json');
  if (outcome === 'duplicate') {
    deps.metrics.webhooksReceived.inc({ endpoint: req.endpoint, outcome: 'duplicate' });
    return { status: 200, body: { ok: true, duplicate: true } };
  }
  deps.metrics.webhooksReceived.inc({ endpoint: req.endpoint, outcome: 'stored' });
  return { status: 200, body: { ok: true } };
}
