import { type Processor, Worker } from 'bullmq';
import { alertProcessor } from '../../jobs/alerts.ts';
import { type ChainJobDeps, chainProcessor } from '../../jobs/chain.ts';
import { claimLinkProcessor } from '../../jobs/claimLinks.ts';
import { eventsProcessor } from '../../jobs/events.ts';
import type { JobContext } from '../../jobs/jobContext.ts';
import { maintenanceProcessor } from '../../jobs/maintenance.ts';
import { pollProcessor } from '../../jobs/pollIntent.ts';
import { webhookProcessor } from '../../jobs/processWebhook.ts';
import { QUEUE } from '../../jobs/queues.ts';
import { reconProcessor } from '../../jobs/recon.ts';
import { withRetryability } from '../../jobs/withRetryability.ts';
import type { AlertDeps } from '../alerts/evaluateAlerts.ts';
import { createNotifiers, DEFAULT_RETRY } from '../alerts/notifiers.ts';
import { secretValues } from '../config/loadConfig.ts';
import type { DeliveryDeps } from '../events/deliverEvents.ts';
import type { DaemonPart, DaemonRuntime } from './daemonRuntime.ts';

/**
 * The worker role: one BullMQ worker per queue, each running its processor from jobs/ inside
 * withRetryability. stop() closes them, which waits for their in-flight jobs: the drain.
 */
export function startWorkers(rt: DaemonRuntime, ctx: JobContext): DaemonPart {
  const { config, logger, metrics } = rt;
  const connection = { url: config.redisUrl, maxRetriesPerRequest: null };
  const workers: Worker[] = [];
  const run = (
    queue: string,
    label: string,
    processor: Processor,
    options: { concurrency: number; limiter?: { max: number; duration: number } },
  ) => {
    const worker = new Worker(queue, withRetryability(processor), {
      connection,
      prefix: config.queuePrefix,
      // An idle worker's blocking wait (BZPOPMIN) ends on a new job's marker at once; this bounds
      // it when nothing is due. BullMQ's default of 5 s woke every idle queue 12 times a minute
      // for nothing; 10 s is the bound BullMQ itself keeps while a delayed job is due later.
      drainDelay: 10,
      ...options,
    });
    worker.on('completed', (job) => {
      metrics.jobsProcessed.inc({ queue: label, outcome: 'completed' });
      if (job.finishedOn && job.processedOn)
        metrics.jobSeconds.observe({ queue: label }, (job.finishedOn - job.processedOn) / 1000);
    });
    worker.on('failed', (job, err) => {
      metrics.jobsProcessed.inc({ queue: label, outcome: 'failed' });
      logger.warn({ err, queue: label, jobId: job?.id, attempts: job?.attemptsMade }, 'job failed');
    });
    worker.on('error', (err) => logger.error({ err, queue: label }, 'worker error'));
    workers.push(worker);
  };

  // The processor applies the jobs it holds as batches (jobs/processWebhook.ts): the more jobs at
  // once, the larger the batches (16 gave 455 payments/s, 64 gave 563; benchmarks.md).
  run(QUEUE.webhooks, 'webhooks', webhookProcessor(ctx), { concurrency: 64 });
  for (const store of config.stores) {
    run(QUEUE.polls(store.storeId), 'polls', pollProcessor(ctx), {
      concurrency: 8,
      limiter: { max: Math.max(1, Math.round(config.pollsPerSecond)), duration: 1000 },
    });
  }
  run(QUEUE.chain, 'chain', chainProcessor(chainJobDeps(rt)), { concurrency: 4 });
  run(QUEUE.claimLinks, 'claim-links', claimLinkProcessor(ctx, { refundGraceMs: config.refundGraceMs }), {
    concurrency: 1,
  });
  run(QUEUE.alerts, 'alerts', alertProcessor(alertDeps(rt)), { concurrency: 1 });
  run(
    QUEUE.recon,
    'recon',
    reconProcessor({ db: rt.database.db, config, rpcs: rt.rpcs, logger, clock: rt.clock, metrics }),
    { concurrency: 1 },
  );
  run(QUEUE.maintenance, 'maintenance', maintenanceProcessor(ctx), { concurrency: 1 });
  // Without EVENTS_WEBHOOK_URL there is nothing to deliver (the scheduler adds no job): no worker
  // waits on the queue.
  const delivery = eventDeliveryDeps(rt);
  if (delivery) run(QUEUE.events, 'events', eventsProcessor(delivery), { concurrency: 1 });

  return {
    stop: async () => {
      await Promise.all(workers.map((w) => w.close()));
    },
  };
}

function chainJobDeps(rt: DaemonRuntime): ChainJobDeps {
  const { config, database, rpcs, metrics, logger, clock } = rt;
  // How long a payment may wait for its explanation (the chain for a confirmed intent, an intent
  // for a transfer) before it is verified by receipt or booked to suspense.
  const graceMs = 10 * 60_000 * config.pollIntervalScale;
  return {
    rpcs,
    indexerFor: (chainId) => {
      const rpc = rpcs.get(chainId);
      return rpc && { db: database.db, pool: database.pool, config, rpc, metrics, logger, clock };
    },
    apply: { db: database.db, config, accounts: rt.domain.accounts, clock, unmatchedGraceMs: graceMs },
    verify: { db: database.db, chains: config.chains, stores: config.stores, rpcs, clock, graceMs },
    prove: { db: database.db, config, rpcs, clock },
    metrics,
  };
}

/** Delivery of the outbound events, or undefined without EVENTS_WEBHOOK_URL (loadConfig requires the secret with it). */
function eventDeliveryDeps(rt: DaemonRuntime): DeliveryDeps | undefined {
  const { eventsWebhookUrl: url, eventsWebhookSecret: secret } = rt.config;
  if (!url || !secret) return undefined;
  return {
    db: rt.database.db,
    clock: rt.clock,
    logger: rt.logger,
    url,
    secret,
    onOutcome: (outcome) => rt.metrics.eventsDelivered.inc({ outcome }),
  };
}

function alertDeps(rt: DaemonRuntime): AlertDeps {
  const { config, clock } = rt;
  return {
    db: rt.database.db,
    clock,
    logger: rt.logger,
    metrics: rt.metrics,
    notifiers: createNotifiers({
      webhookUrl: config.alertWebhookUrl,
      webhookSecret: config.alertWebhookSecret,
      slackWebhookUrl: config.alertSlackWebhookUrl,
      clock,
    }),
    routes: config.alertRoutes,
    remindMs: config.alertRemindMs,
    chainLagBlocks: config.alertChainLagBlocks,
    secrets: secretValues(config),
    retry: DEFAULT_RETRY,
  };
}
