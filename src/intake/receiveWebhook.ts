import { sql } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { StoreConfig } from '../config/stores.ts';
import type { DbExecutor } from '../db/database.ts';
import type { Logger } from '../logging/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { type HeaderBag, readHeader } from '../svc/signing/requestSignature.ts';
import { verifyWebhookSignature } from '../svc/signing/webhookSignature.ts';

/**
 * Webhook intake (DESIGN.md section 4): verify, store durably, enqueue, answer. A webhook is
 * answered 200 only once it is stored (or was already: same webhook_id); 401 for a failed
 * signature, timestamp or nonce check with the reason; 400 for a body that is not JSON (stored
 * as rejected, for audit). Storing is one statement (nonce claim and inbox row together), so the
 * cost is one commit; the job is added after it and, if Redis is down, the sweeper adds it later.
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
  status: 200 | 400 | 401;
  body: { ok: boolean; reason?: string; duplicate?: boolean };
}

export interface IntakeDeps {
  db: DbExecutor;
  clock: Clock;
  /** Stores by api_key. */
  storesByKey: Map<string, StoreConfig>;
  /** Adds the processing job for a stored webhook (job id derived from webhook_id). */
  enqueue(webhookId: string): Promise<void>;
  metrics: Metrics;
  logger: Logger;
}

export async function receiveWebhook(deps: IntakeDeps, req: IntakeRequest): Promise<IntakeAnswer> {
  const reject = (status: 400 | 401, reason: string): IntakeAnswer => {
    deps.metrics.webhooksRejected.inc({ endpoint: req.endpoint, reason });
    return { status, body: { ok: false, reason } };
  };
  const apiKey = readHeader(req.headers, 'X-API-Key');
  if (!apiKey) return reject(401, 'missing_header: X-API-Key');
  const store = deps.storesByKey.get(apiKey);
  if (!store) return reject(401, 'unknown_api_key');

  // The nonce is claimed below in the same statement as the inbox row; verification only tells
  // us which nonce and for how long.
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
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([, v]) => v !== undefined));
  const { rows } = await deps.db.execute<{ nonce_ok: boolean; inserted: boolean }>(sql`
    with n as (
      insert into webhook_nonces (nonce, expires_at)
      values (${claim.key}, now() + ${claim.ttlSeconds} * interval '1 second')
      on conflict (nonce) do update set expires_at = excluded.expires_at where webhook_nonces.expires_at < now()
      returning 1
    ), i as (
      insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body, error)
      select ${webhookId}, ${store.storeId}, ${req.endpoint}, ${json ? 'received' : 'rejected'},
             ${JSON.stringify(headers)}::jsonb, ${req.rawBody}, ${json ? null : 'body is not valid JSON'}
      where exists (select 1 from n)
      on conflict (webhook_id) do nothing
      returning 1
    )
    select exists (select 1 from n) as nonce_ok, exists (select 1 from i) as inserted`);
  const outcome = rows[0];
  if (!outcome?.nonce_ok) return reject(401, 'nonce_reused');
  if (!json) return reject(400, 'malformed_json');
  if (!outcome.inserted) {
    deps.metrics.webhooksReceived.inc({ endpoint: req.endpoint, outcome: 'duplicate' });
    return { status: 200, body: { ok: true, duplicate: true } };
  }
  deps.metrics.webhooksReceived.inc({ endpoint: req.endpoint, outcome: 'stored' });
  try {
    await deps.enqueue(webhookId);
  } catch (err) {
    // Stored is what counts: the sweeper enqueues rows that have no job.
    deps.logger.warn({ err, webhookId }, 'webhook stored but not enqueued; the sweeper will enqueue it');
  }
  return { status: 200, body: { ok: true } };
}
