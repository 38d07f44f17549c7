import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Every metric of the daemon, declared in one place with typed, bounded labels: never an id or
 * an amount in a label. Names follow `stablebooks_<thing>_total` / `_seconds` / plain gauges.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Values that live in PostgreSQL or Redis are read at scrape time, by the sources that
  // src/metrics/collectors.ts plugs in here (cached for a few seconds there). Without them
  // (a registry in a test or a CLI command) those metrics stay empty.
  const sources: ScrapeSources = {};
  const fromDatabase = async () => {
    await sources.database?.();
  };
  const fromQueues = async () => {
    await sources.queues?.();
  };
  return {
    registry,
    sources,
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
    webhookIntakeErrors: new Counter({
      name: 'stablebooks_webhook_intake_errors_total',
      help: 'Webhooks answered 5xx (the sender retries), by endpoint and reason (store_unavailable: PostgreSQL did not take them; queue_full: too many webhooks already waiting for storage; internal: anything else)',
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
    inboxBatchWebhooks: new Histogram({
      name: 'stablebooks_inbox_batch_webhooks',
      help: 'Webhooks stored by one inbox statement (group commit)',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500],
      registers: [registry],
    }),
    inboxBatchSeconds: new Histogram({
      name: 'stablebooks_inbox_batch_seconds',
      help: 'Time of one inbox batch step: store (the statement and its commit) or enqueue (the jobs added to Redis)',
      labelNames: ['step'] as const,
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
    // Counted in PostgreSQL at scrape time rather than by the writers: entries are append-only,
    // so the count only grows (a counter), and every process reports the same books.
    ledgerEntries: new Counter({
      name: 'stablebooks_ledger_entries_total',
      help: 'Ledger entries in the books, by kind (counted in PostgreSQL at scrape time; every process reports the same value)',
      labelNames: ['kind'] as const,
      collect: fromDatabase,
      registers: [registry],
    }),
    ledgerImbalance: new Gauge({
      name: 'stablebooks_ledger_imbalance',
      help: 'Assets whose postings do not sum to zero; must be 0 (PostgreSQL refuses unbalanced entries)',
      collect: fromDatabase,
      registers: [registry],
    }),
    // Read at scrape time too: a sealer that stopped is seen as a growing lag, whichever process scrapes.
    ledgerUnsealedEntries: new Gauge({
      name: 'stablebooks_ledger_unsealed_entries',
      help: 'Committed ledger entries not yet in the hash chain (the ledger.seal job seals them every few seconds)',
      collect: fromDatabase,
      registers: [registry],
    }),
    ledgerSealLag: new Gauge({
      name: 'stablebooks_ledger_seal_lag_seconds',
      help: 'Age of the oldest committed ledger entry not yet in the hash chain (0 when every entry is sealed)',
      collect: fromDatabase,
      registers: [registry],
    }),
    ledgerBalance: new Gauge({
      name: 'stablebooks_ledger_balance',
      help: 'Balance of each account kind summed over stores, by chain and token, in token units (debit positive, credit negative; display only, exact figures in the ledger)',
      labelNames: ['account', 'chain_id', 'token'] as const,
      collect: fromDatabase,
      registers: [registry],
    }),
    intents: new Gauge({
      name: 'stablebooks_intents',
      help: 'Checkout intents by status name (UNKNOWN before the first status)',
      labelNames: ['status'] as const,
      collect: fromDatabase,
      registers: [registry],
    }),
    findingsOpen: new Gauge({
      name: 'stablebooks_findings_open',
      help: 'Open findings not yet acknowledged, by kind and severity (info, warning, critical)',
      labelNames: ['kind', 'severity'] as const,
      collect: fromDatabase,
      registers: [registry],
    }),
    payouts: new Gauge({
      name: 'stablebooks_payouts',
      help: 'Claim-link payouts by create outcome (pending, created, failed, unknown) and link status (none before a link exists)',
      labelNames: ['create_outcome', 'link_status'] as const,
      collect: fromDatabase,
      registers: [registry],
    }),
    eventsOutboxPending: new Gauge({
      name: 'stablebooks_events_outbox_pending',
      help: 'Outbound events in the outbox neither delivered nor given up (read from PostgreSQL at scrape time while EVENTS_WEBHOOK_URL is set; 0 without it)',
      collect: fromDatabase,
      registers: [registry],
    }),
    eventsDelivered: new Counter({
      name: 'stablebooks_events_delivered_total',
      help: 'Delivery attempts of outbound events in this process, by outcome: delivered (a 2xx), failed (retried later with backoff), given_up (not delivered within 3 days; kept, never sent again)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    queueJobs: new Gauge({
      name: 'stablebooks_queue_jobs',
      help: 'Jobs in each BullMQ queue by state (waiting, active, delayed, prioritized, waiting-children, failed, completed); the per-store poll queues are summed as polls',
      labelNames: ['queue', 'state'] as const,
      collect: fromQueues,
      registers: [registry],
    }),
    scrapeErrors: new Counter({
      name: 'stablebooks_metrics_scrape_errors_total',
      help: 'Scrape-time reads that failed, by source (database, queues); the metrics keep their last values',
      labelNames: ['source'] as const,
      registers: [registry],
    }),
    rpcRequests: new Counter({
      name: 'stablebooks_rpc_requests_total',
      help: 'JSON-RPC requests to chain nodes (each attempt, each URL), by method and outcome (ok, error, rate_limited, timeout)',
      labelNames: ['chain_id', 'method', 'outcome'] as const,
      registers: [registry],
    }),
    rpcRequestSeconds: new Histogram({
      name: 'stablebooks_rpc_request_seconds',
      help: 'Duration of JSON-RPC requests to chain nodes (each attempt), by method',
      labelNames: ['chain_id', 'method'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    chainHeadBlock: new Gauge({
      name: 'stablebooks_chain_head_block',
      help: 'The latest block number the chain node reported',
      labelNames: ['chain_id'] as const,
      registers: [registry],
    }),
    chainFinalizedBlock: new Gauge({
      name: 'stablebooks_chain_finalized_block',
      help: 'The highest block the indexer treats as final (finalized tag or head minus depth)',
      labelNames: ['chain_id'] as const,
      registers: [registry],
    }),
    chainIndexedBlock: new Gauge({
      name: 'stablebooks_chain_indexed_block',
      help: 'The transfer indexer cursor: the last block whose logs are stored',
      labelNames: ['chain_id'] as const,
      registers: [registry],
    }),
    chainLastPass: new Gauge({
      name: 'stablebooks_chain_last_pass_timestamp_seconds',
      help: 'Wall-clock time of the last indexer pass that read the head and recorded it (a stuck indexer stops moving it; ChainStalled)',
      labelNames: ['chain_id'] as const,
      registers: [registry],
    }),
    chainLagBlocks: new Gauge({
      name: 'stablebooks_chain_lag_blocks',
      help: 'Blocks between the chain head and the indexer cursor',
      labelNames: ['chain_id'] as const,
      registers: [registry],
    }),
    chainReorgs: new Counter({
      name: 'stablebooks_chain_reorgs_total',
      help: 'Reorgs the indexer confirmed (stored block hashes the chain no longer has)',
      labelNames: ['chain_id'] as const,
      registers: [registry],
    }),
    chainReorgDepth: new Histogram({
      name: 'stablebooks_chain_reorg_depth',
      help: 'Depth in blocks of each confirmed reorg, as far as the indexer could see it',
      labelNames: ['chain_id'] as const,
      buckets: [1, 2, 3, 5, 10, 20, 50, 100, 250],
      registers: [registry],
    }),
    chainReorgsBeyondFinality: new Counter({
      name: 'stablebooks_chain_reorgs_beyond_finality_total',
      help: 'Reorgs that orphaned transfers already final, or deeper than the finality depth of their chain (finding reorg_beyond_finality)',
      labelNames: ['chain_id'] as const,
      registers: [registry],
    }),
    chainTransfersIndexed: new Counter({
      name: 'stablebooks_chain_transfers_indexed_total',
      help: 'Transfer logs newly stored by the indexer',
      labelNames: ['chain_id'] as const,
      registers: [registry],
    }),
    chainTransfersRecovered: new Counter({
      name: 'stablebooks_chain_transfers_recovered_total',
      help: 'Transfer logs an earlier eth_getLogs answer left out, found by the re-read of final blocks (an RPC answering incompletely)',
      labelNames: ['chain_id'] as const,
      registers: [registry],
    }),
    chainNodeDisagreements: new Counter({
      name: 'stablebooks_chain_node_disagreements_total',
      help: 'Block hash mismatches one RPC URL showed and another did not (not treated as a reorg)',
      labelNames: ['chain_id'] as const,
      registers: [registry],
    }),
    balanceProofOk: new Gauge({
      name: 'stablebooks_balance_proof_ok',
      help: 'Last balance proof per watched wallet role and token: 1 ledger equals balanceOf, 0 they differ, -1 could not be proven',
      labelNames: ['chain_id', 'token', 'role'] as const,
      registers: [registry],
    }),
    balanceProofDrift: new Gauge({
      name: 'stablebooks_balance_proof_drift',
      help: 'Ledger balance minus balanceOf at the last proof, in token units (display only; exact figures in balance_proofs)',
      labelNames: ['chain_id', 'token', 'role'] as const,
      registers: [registry],
    }),
    reconLastSuccess: new Gauge({
      name: 'stablebooks_recon_last_success_timestamp_seconds',
      help: 'When the last reconciliation run that completed finished (Unix seconds), by scope (all or store); read from recon_runs at scrape time',
      labelNames: ['scope'] as const,
      registers: [registry],
      collect: fromDatabase,
    }),
    reconLastPassed: new Gauge({
      name: 'stablebooks_recon_last_passed',
      help: 'Whether the last completed reconciliation run proved the books (1) or not (0), by scope (all or store)',
      labelNames: ['scope'] as const,
      registers: [registry],
      collect: fromDatabase,
    }),
    reconProgress: new Gauge({
      name: 'stablebooks_recon_run_progress_ratio',
      help: 'Progress of the reconciliation run in this process (0..1) by phase; 1 with phase done when finished',
      labelNames: ['phase'] as const,
      registers: [registry],
    }),
    reconRunSeconds: new Histogram({
      name: 'stablebooks_recon_run_duration_seconds',
      help: 'Duration of reconciliation runs in this process, by outcome (completed, failed)',
      labelNames: ['outcome'] as const,
      buckets: [0.5, 1, 5, 15, 30, 60, 300, 900],
      registers: [registry],
    }),
    alertNotifications: new Counter({
      name: 'stablebooks_alert_notifications_total',
      help: 'Alert messages per notifier (webhook, slack) and outcome: sent, retried (an attempt failed, another follows), failed (every attempt of a run failed; the message stays owed)',
      labelNames: ['notifier', 'outcome'] as const,
      registers: [registry],
    }),
  };
}

/** The scrape-time readers of values kept in PostgreSQL and Redis (src/metrics/collectors.ts). */
export interface ScrapeSources {
  database?: () => Promise<void>;
  queues?: () => Promise<void>;
}

export type Metrics = ReturnType<typeof createMetrics>;
