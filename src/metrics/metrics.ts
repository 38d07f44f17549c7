import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/**
 * Every metric of the daemon, declared in one place with typed, bounded labels: never an id or
 * an amount in a label. Names follow `stablebooks_<thing>_total` / `_seconds` / plain gauges.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    webhooksReceived: new Counter({
      name: 'stablebooks_webhooks_received_total',
      help: 'Webhooks received, by endpoint and outcome (stored, duplicate)',
      labelNames: ['endpoint', 'outcome'] as const,
      registers: [registry],
    }),
    webhooksRejected: new Counter({
      name: 'stablebooks_webhooks_rejected_total',
      help: 'Webhooks refused, by endpoint and reason (missing_header, bad_signature, stale_timestamp, nonce_reused, unknown_api_key, malformed_json, too_large)',
      labelNames: ['endpoint', 'reason'] as const,
      registers: [registry],
    }),
    webhookIntakeSeconds: new Histogram({
      name: 'stablebooks_webhook_intake_seconds',
      help: 'Time from a webhook request to its answer',
      labelNames: ['endpoint'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    jobsProcessed: new Counter({
      name: 'stablebooks_jobs_processed_total',
      help: 'Jobs finished, by queue and outcome (completed, failed, rate_limited)',
      labelNames: ['queue', 'outcome'] as const,
      registers: [registry],
    }),
    jobSeconds: new Histogram({
      name: 'stablebooks_job_duration_seconds',
      help: 'Job processing time by queue',
      labelNames: ['queue'] as const,
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers: [registry],
    }),
    apiRequests: new Counter({
      name: 'stablebooks_api_requests_total',
      help: 'Requests to the payments service, by endpoint and outcome (envelope code or failure kind)',
      labelNames: ['endpoint', 'outcome'] as const,
      registers: [registry],
    }),
    apiRequestSeconds: new Histogram({
      name: 'stablebooks_api_request_duration_seconds',
      help: 'Duration of requests to the payments service, by endpoint',
      labelNames: ['endpoint'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
      registers: [registry],
    }),
    polls: new Counter({
      name: 'stablebooks_intent_polls_total',
      help: 'Intent status polls, by outcome (unchanged, changed, rate_limited, error)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    ledgerEntries: new Counter({
      name: 'stablebooks_ledger_entries_total',
      help: 'Ledger entries written by this process, by kind',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
