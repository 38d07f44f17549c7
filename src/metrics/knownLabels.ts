import type { SignatureFailureReason } from '../svc/signing/requestSignature.ts';
import type { Metrics } from './metrics.ts';

/**
 * The label values each labelled counter and histogram can take, and initialiseLabels, which
 * creates their series at zero when the process starts. prom-client exports a labelled metric
 * only once a series of it has been counted: until then rate() has nothing to read (a dashboard
 * draws no line, a rate rule sees no series) and absent() cannot tell "never happened" from "not
 * exported". A series at zero from the start answers both.
 *
 * Values named in layers above this one (the intake's endpoints, the job queues, the notifiers:
 * src/metrics may not import them) are repeated here; test/unit/metrics/knownLabels.test.ts
 * checks them against the code's own constants. Chain ids and tokens come from the configuration.
 *
 * Gauges are left alone but for the balance-proof drift: a gauge at 0 is a value (a block 0, a
 * pass at 1970, a proof that failed), so a gauge is set only by what measures it. The drift is a
 * display of ledger minus balanceOf, and 0 until the first proof is what the dashboard should show.
 * Metrics whose label values are open sets (the service's envelope codes, RPC methods) are left
 * alone too.
 */

/** The intake's endpoints (src/intake/intakeRoutes.ts). */
export const WEBHOOK_ENDPOINTS = ['checkout', 'claim-links'] as const;

/** `stablebooks_webhooks_received_total` outcomes (src/intake/receiveWebhook.ts). */
export const WEBHOOK_RECEIVED_OUTCOMES = ['stored', 'duplicate'] as const;

/** The headers whose absence is a `missing_header: <name>` rejection (the API key, then the signed ones). */
const REQUIRED_WEBHOOK_HEADERS = [
  'X-API-Key',
  'X-Webhook-Id',
  'X-Webhook-Timestamp',
  'X-Webhook-Nonce',
  'X-Webhook-Signature',
] as const;

const SIGNATURE_FAILURES = {
  missing_header: true,
  bad_signature: true,
  stale_timestamp: true,
  nonce_reused: true,
} as const satisfies Record<SignatureFailureReason, true>;

/**
 * `stablebooks_webhooks_rejected_total` reasons as the intake writes them: a signature failure
 * (a missing header with its name), an unknown API key, a body that is not JSON, one over 1 MiB.
 */
export const WEBHOOK_REJECT_REASONS = [
  ...REQUIRED_WEBHOOK_HEADERS.map((h) => `missing_header: ${h}` as const),
  ...(Object.keys(SIGNATURE_FAILURES) as SignatureFailureReason[]).filter((r) => r !== 'missing_header'),
  'unknown_api_key',
  'malformed_json',
  'too_large',
] as const;

/**
 * Why the intake answered 5xx (`stablebooks_webhook_intake_errors_total`): PostgreSQL did not
 * take the webhooks, too many were already waiting for storage, or anything else.
 */
export const INTAKE_ERROR_REASONS = ['store_unavailable', 'queue_full', 'internal'] as const;
export type IntakeErrorReason = (typeof INTAKE_ERROR_REASONS)[number];

/** Steps of an inbox batch (`stablebooks_inbox_batch_seconds`). */
export const INBOX_BATCH_STEPS = ['store', 'enqueue'] as const;

/** The `queue` label of the job metrics: every queue of jobs/queues.ts, the per-store poll queues as `polls`. */
export const JOB_QUEUES = [
  'webhooks',
  'maintenance',
  'chain',
  'claim-links',
  'alerts',
  'recon',
  'events',
  'polls',
] as const;

/** `stablebooks_jobs_processed_total` outcomes (src/daemon/workers.ts). */
export const JOB_OUTCOMES = ['completed', 'failed'] as const;

/** `stablebooks_intent_polls_total` outcomes (jobs/pollIntent.ts). */
export const POLL_OUTCOMES = ['unchanged', 'changed', 'rate_limited', 'error'] as const;

/** `stablebooks_metrics_scrape_errors_total` sources (src/metrics/collectors.ts). */
export const SCRAPE_SOURCES = ['database', 'queues'] as const;

/** `stablebooks_recon_run_duration_seconds` outcomes (src/recon/runReconciliation.ts). */
export const RECON_RUN_OUTCOMES = ['completed', 'failed'] as const;

/** The alert notifiers (src/alerts/routes.ts) and the outcomes of their messages. */
export const ALERT_NOTIFIERS = ['webhook', 'slack'] as const;
export const ALERT_NOTIFICATION_OUTCOMES = ['sent', 'retried', 'failed'] as const;

/** `stablebooks_events_delivered_total` outcomes (src/events/deliverEvents.ts). */
export const EVENT_DELIVERY_OUTCOMES = ['delivered', 'failed', 'given_up'] as const;

/** The roles a store's wallet is proven in (src/recon/balanceProofs.ts). */
export const BALANCE_PROOF_ROLES = ['merchant', 'custody'] as const;

/** What of the configuration names label values; src/config's Config is one. */
export interface LabelConfig {
  /** The chains with RPC URLs: one indexer each, the `chain_id` of the chain metrics. */
  rpcUrls: ReadonlyMap<number, unknown>;
  /** Each store's wallets by chain, proven in both roles in every token of their chain. */
  stores: ReadonlyArray<{ wallets: ReadonlyMap<number, unknown> }>;
  chains: { chain(chainId: number): { tokens: ReadonlyArray<{ symbol: string }> } | undefined };
}

/**
 * Creates every known series of the labelled counters and histograms at zero, and the balance-proof
 * drift of every configured (chain, token, role) at 0; the chain series only with a configuration.
 * Call it once, right after createMetrics() and before anything counts: a histogram series or a
 * drift already measured would be set back to zero (counters are not: they add 0).
 */
export function initialiseLabels(metrics: Metrics, config?: LabelConfig): void {
  for (const endpoint of WEBHOOK_ENDPOINTS) {
    for (const outcome of WEBHOOK_RECEIVED_OUTCOMES) metrics.webhooksReceived.inc({ endpoint, outcome }, 0);
    for (const reason of WEBHOOK_REJECT_REASONS) metrics.webhooksRejected.inc({ endpoint, reason }, 0);
    for (const reason of INTAKE_ERROR_REASONS) metrics.webhookIntakeErrors.inc({ endpoint, reason }, 0);
    metrics.webhookIntakeSeconds.zero({ endpoint });
  }
  for (const step of INBOX_BATCH_STEPS) metrics.inboxBatchSeconds.zero({ step });
  for (const queue of JOB_QUEUES) {
    for (const outcome of JOB_OUTCOMES) metrics.jobsProcessed.inc({ queue, outcome }, 0);
    metrics.jobSeconds.zero({ queue });
  }
  for (const outcome of POLL_OUTCOMES) metrics.polls.inc({ outcome }, 0);
  for (const source of SCRAPE_SOURCES) metrics.scrapeErrors.inc({ source }, 0);
  for (const outcome of RECON_RUN_OUTCOMES) metrics.reconRunSeconds.zero({ outcome });
  for (const notifier of ALERT_NOTIFIERS)
    for (const outcome of ALERT_NOTIFICATION_OUTCOMES)
      metrics.alertNotifications.inc({ notifier, outcome }, 0);
  for (const outcome of EVENT_DELIVERY_OUTCOMES) metrics.eventsDelivered.inc({ outcome }, 0);
  if (!config) return;

  for (const chainId of config.rpcUrls.keys()) {
    const labels = { chain_id: String(chainId) };
    metrics.chainReorgs.inc(labels, 0);
    metrics.chainReorgDepth.zero(labels);
    metrics.chainReorgsBeyondFinality.inc(labels, 0);
    metrics.chainTransfersIndexed.inc(labels, 0);
    metrics.chainTransfersRecovered.inc(labels, 0);
    metrics.chainNodeDisagreements.inc(labels, 0);
  }
  for (const store of config.stores)
    for (const chainId of store.wallets.keys())
      for (const { symbol } of config.chains.chain(chainId)?.tokens ?? [])
        for (const role of BALANCE_PROOF_ROLES)
          metrics.balanceProofDrift.set({ chain_id: String(chainId), token: symbol, role }, 0);
}
