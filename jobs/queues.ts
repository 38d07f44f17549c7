import { z } from 'zod';

/**
 * The job catalog: every queue, the payload of its jobs, attempts and backoff, in one place.
 * Processors (one file each in jobs/) parse their payload with these schemas and call one domain
 * function from src/.
 *
 * - webhooks: one job per stored webhook, id `wh.<webhook_id>` (a repeat cannot add a second);
 * - polls-<store_id>: one queue per API key, so one BullMQ rate limit per key is shared by every
 *   process; job id `poll.<intent>.<n>` (n = the intent's poll count), so a chain of polls has
 *   exactly one next job however many processes schedule it;
 * - maintenance: the sweepers, the balance checkpoints and the ledger's sealing, on job schedulers
 *   (exactly one schedule whatever the process count);
 * - chain: one indexer pass per chain on a scheduler `chain.index.<chain id>`, the single-hash
 *   verifications and the balance proofs (a PostgreSQL advisory lock per chain keeps one indexer
 *   pass at a time even when two processes run one);
 * - claim-links: the 14-day expiry and the overdue-refund check;
 * - alerts: the alert evaluation (src/alerts/evaluateAlerts.ts), on one job scheduler;
 * - recon: the reconciliation run (src/recon/runReconciliation.ts), on one cron job scheduler
 *   (RECON_CRON, UTC) for the previous UTC day;
 * - events: the delivery of outbound events from the outbox (src/events/deliverEvents.ts), on one
 *   job scheduler while EVENTS_WEBHOOK_URL is set.
 */
export const QUEUE = {
  webhooks: 'webhooks',
  maintenance: 'maintenance',
  chain: 'chain',
  claimLinks: 'claim-links',
  alerts: 'alerts',
  recon: 'recon',
  events: 'events',
  polls: (storeId: string) => `polls-${storeId}`,
} as const;

export const webhookJob = {
  name: 'webhook.process',
  data: z.object({ webhookId: z.string().min(1) }),
  // BullMQ refuses ":" in a custom id; the sender chooses webhook ids, so they are encoded.
  jobId: (webhookId: string) => `wh.${encodeURIComponent(webhookId)}`,
  options: {
    attempts: 10,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: 10_000,
    removeOnFail: 50_000,
  },
} as const;

export const pollJob = {
  name: 'intent.poll',
  // n: the poll's number (absent from jobs queued before it was carried; their id has it).
  data: z.object({ intentId: z.string().min(1), storeId: z.string().min(1), n: z.int().min(0).optional() }),
  jobId: (intentId: string, pollCount: number) => `poll.${intentId}.${pollCount}`,
  options: {
    attempts: 5,
    backoff: { type: 'exponential', delay: 2000 },
    removeOnComplete: 1000,
    removeOnFail: 10_000,
  },
} as const;

export const maintenanceJobs = {
  /** Enqueues inbox rows that have no job (Redis was down at intake, or a job was lost). */
  sweepInbox: { name: 'inbox.sweep', everyMs: 30_000, data: z.object({}) },
  /** Re-adds the poll of tracked intents whose poll chain broke. */
  sweepPolls: { name: 'polls.sweep', everyMs: 60_000, data: z.object({}) },
  /** Advances the ledger's balance checkpoints, so one account's balance stays a short read. */
  checkpointBalances: { name: 'ledger.checkpoint', everyMs: 5 * 60_000, data: z.object({}) },
  /** Extends the ledger's hash chain over the entries committed since (src/ledger/sealLedger.ts). */
  sealLedger: { name: 'ledger.seal', everyMs: 5_000, data: z.object({}) },
  /** Deletes webhook nonces past their lifetime. */
  pruneNonces: { name: 'nonces.prune', everyMs: 10 * 60_000, data: z.object({}) },
  /** Deletes outbound events delivered or given up a week ago (every one that old when delivery is off). */
  pruneEvents: { name: 'events.prune', everyMs: 60 * 60_000, data: z.object({}) },
} as const;

export const chainJobs = {
  /**
   * One indexer pass over one chain: reorg check, new logs, finality, applying final transfers.
   * Its interval is the chain's own (src/chain/indexPassInterval.ts).
   */
  index: {
    name: 'chain.index',
    data: z.object({ chainId: z.int().positive() }),
    schedulerId: (chainId: number) => `chain.index.${chainId}`,
  },
  /** Confirmed intents whose payment the indexer has not proven after a grace: verify the hash by receipt. */
  verifyPayments: { name: 'chain.verify', everyMs: 30_000, data: z.object({}) },
  /** Balance proofs of every watched (chain, token, wallet). */
  prove: { name: 'chain.prove', everyMs: 5 * 60_000, data: z.object({}) },
} as const;

export const claimLinkJobs = {
  /** Funded links 14 days old, neither claimed nor cancelled, become expired (rule 7). */
  expire: { name: 'claim_links.expire', everyMs: 60 * 60_000, data: z.object({}) },
  /** Cancelled or expired links whose refund has not arrived within the grace: a finding. */
  refundsOverdue: { name: 'claim_links.refunds_overdue', everyMs: 10 * 60_000, data: z.object({}) },
} as const;

export const alertJobs = {
  /** Alert conditions from findings, balance proofs, chain lag and stalled indexers; firing, reminder, resolved messages. */
  evaluate: { name: 'alerts.evaluate', everyMs: 60_000, data: z.object({}) },
} as const;

export const eventJobs = {
  /** Delivers the due outbound events (claimed with SKIP LOCKED: any number of workers at once). */
  deliver: { name: 'events.deliver', everyMs: 2_000, data: z.object({}) },
} as const;

export const reconJobs = {
  /**
   * One reconciliation run. The scheduled job carries no period (it covers the UTC day before the
   * time it runs); a job added by hand may name one. Rerunning a period replaces its report.
   */
  run: {
    name: 'recon.run',
    schedulerId: 'recon.daily',
    data: z.object({
      from: z.iso.datetime().optional(),
      to: z.iso.datetime().optional(),
      storeId: z.string().min(1).optional(),
    }),
    options: {
      attempts: 3,
      backoff: { type: 'exponential', delay: 60_000 },
      removeOnComplete: 100,
      removeOnFail: 1000,
    },
  },
} as const;
