import { Queue, Worker } from 'bullmq';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { addWebhookJobs } from '../../jobs/addWebhookJobs.ts';
import { alertProcessor } from '../../jobs/alerts.ts';
import { type ChainJobDeps, chainProcessor } from '../../jobs/chain.ts';
import { claimLinkProcessor } from '../../jobs/claimLinks.ts';
import type { JobContext } from '../../jobs/jobContext.ts';
import { queueKeyPause } from '../../jobs/keyPause.ts';
import { maintenanceProcessor } from '../../jobs/maintenance.ts';
import { pollProcessor } from '../../jobs/pollIntent.ts';
import { webhookProcessor } from '../../jobs/processWebhook.ts';
import { alertJobs, chainJobs, claimLinkJobs, maintenanceJobs, QUEUE, reconJobs } from '../../jobs/queues.ts';
import { reconProcessor } from '../../jobs/recon.ts';
import type { AlertDeps } from '../alerts/evaluateAlerts.ts';
import { createNotifiers, DEFAULT_RETRY } from '../alerts/notifiers.ts';
import { createChainRpcs } from '../chain/rpcClients.ts';
import { type Clock, systemClock } from '../clock.ts';
import { type Config, secretValues } from '../config/loadConfig.ts';
import { createDomainContext } from '../context/domainContext.ts';
import { createDatabase } from '../db/database.ts';
import { createFollowedClock } from '../followedClock.ts';
import { createInboxWriter } from '../intake/inboxWriter.ts';
import { registerIntakeRoutes } from '../intake/intakeRoutes.ts';
import type { Logger } from '../logging/logger.ts';
import { attachCollectors } from '../metrics/collectors.ts';
import { createMetrics, type Metrics } from '../metrics/metrics.ts';
import { registerAdminQueues } from './adminQueues.ts';
import { createHttpServer } from './httpServer.ts';
import type { Role } from './roles.ts';
import { createShutdown } from './shutdown.ts';

/**
 * The daemon (`stablebooks start`). Roles:
 * - intake: the webhook routes (verify, store, enqueue, answer);
 * - worker: the BullMQ workers (webhook processing, polls, maintenance);
 * - scheduler: the job schedulers of the sweepers (BullMQ keeps exactly one per id).
 * Every process serves /healthz, /readyz and /metrics. Any number of processes of any role may
 * share one PostgreSQL and one Redis: job ids, the ledger's idempotency keys and row locks keep
 * every effect single.
 */

export interface DaemonOptions {
  config: Config;
  roles: Role[];
  logger: Logger;
  /** HTTP port; defaults to config.port (0 picks a free one). */
  port?: number;
  host?: string;
  clock?: Clock;
  /** How long SIGTERM waits for in-flight jobs. */
  drainTimeoutMs?: number;
}

export interface RunningDaemon {
  url: string;
  metrics: Metrics;
  stop(): Promise<void>;
}

export async function startDaemon(options: DaemonOptions): Promise<RunningDaemon> {
  const { config, logger } = options;
  const roles = new Set(options.roles);
  const prefix = config.queuePrefix;
  const shutdown = createShutdown();
  let clock = options.clock ?? systemClock;
  if (!options.clock && config.clockUrl) {
    const followed = createFollowedClock(config.clockUrl, {
      onError: (err) =>
        logger.warn({ err: err.message }, 'could not read the followed clock; keeping the last offset'),
    });
    await followed.start();
    shutdown.add('clock', async () => followed.stop());
    clock = followed;
  }
  const metrics = createMetrics();
  const database = createDatabase(config.databaseUrl, {
    max: 10,
    applicationName: `stablebooks ${[...roles].join('+')}`,
  });
  shutdown.add('postgres', () => database.close());

  // For adding jobs from the hot paths: fail fast when Redis is down (the sweepers catch up)
  // instead of queueing commands in memory.
  const producerConnection = new Redis(config.redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: true,
  });
  producerConnection.on('error', (err) => logger.debug({ err }, 'redis (producer) error'));
  producerConnection
    .connect()
    .catch((err) => logger.warn({ err }, 'redis not reachable at start; webhooks are still stored'));
  shutdown.add('redis', async () => {
    producerConnection.disconnect();
  });
  const queueOptions = { connection: producerConnection, prefix };
  // Without a listener BullMQ prints every connection error of a queue to stderr; the producer
  // connection's own listener above already reports them.
  const quiet = (q: Queue) => q.on('error', (err) => logger.debug({ err, queue: q.name }, 'queue error'));
  const webhooks = new Queue(QUEUE.webhooks, queueOptions);
  const maintenance = new Queue(QUEUE.maintenance, queueOptions);
  const chainQueue = new Queue(QUEUE.chain, queueOptions);
  const claimLinks = new Queue(QUEUE.claimLinks, queueOptions);
  const alertsQueue = new Queue(QUEUE.alerts, queueOptions);
  const reconQueue = new Queue(QUEUE.recon, queueOptions);
  for (const q of [webhooks, maintenance, chainQueue, claimLinks, alertsQueue, reconQueue]) quiet(q);
  const pollQueues = new Map<string, Queue>();
  const pollsQueue = (storeId: string): Queue => {
    let q = pollQueues.get(storeId);
    if (!q) {
      q = new Queue(QUEUE.polls(storeId), queueOptions);
      quiet(q);
      pollQueues.set(storeId, q);
    }
    return q;
  };
  shutdown.add('queues', () =>
    Promise.all(
      [webhooks, maintenance, chainQueue, claimLinks, alertsQueue, reconQueue, ...pollQueues.values()].map(
        (q) => q.close(),
      ),
    ),
  );
  const polled = config.stores.map((s) => pollsQueue(s.storeId));
  attachCollectors(metrics, {
    db: database.db,
    queues: [webhooks, maintenance, chainQueue, claimLinks, alertsQueue, reconQueue, ...polled],
  });

  const domain = createDomainContext(config, {
    db: database.db,
    clock,
    logger,
    clientOptions: (storeId) => ({
      // A 40001 pauses the key for every process (the poll queue's rate limit) and is handed to
      // the job, which waits out the pause without spending an attempt.
      retry: { maxAttempts: 3, maxRetryAfterMs: 0 },
      keyPause: queueKeyPause(pollsQueue(storeId)),
      onAttempt: (a) => {
        metrics.apiRequests.inc({ endpoint: a.endpoint, outcome: String(a.outcome) });
        metrics.apiRequestSeconds.observe({ endpoint: a.endpoint }, a.durationMs / 1000);
      },
    }),
  });
  const ctx: JobContext = {
    domain,
    queues: { webhooks, maintenance, polls: pollsQueue },
    pollScale: config.pollIntervalScale,
    metrics,
    logger,
  };

  // How long a payment may wait for its explanation (the chain for a confirmed intent, an intent
  // for a transfer) before it is verified by receipt or booked to suspense.
  const graceMs = 10 * 60_000 * config.pollIntervalScale;
  const rpcs = createChainRpcs(config, metrics);
  const chain: ChainJobDeps = {
    rpcs,
    indexerFor: (chainId) => {
      const rpc = rpcs.get(chainId);
      return rpc && { db: database.db, pool: database.pool, config, rpc, metrics, logger, clock };
    },
    apply: { db: database.db, config, accounts: domain.accounts, clock, unmatchedGraceMs: graceMs },
    verify: { db: database.db, chains: config.chains, rpcs, clock, graceMs },
    prove: { db: database.db, config, rpcs },
    metrics,
  };
  const alerts: AlertDeps = {
    db: database.db,
    clock,
    logger,
    metrics,
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

  if (roles.has('worker')) {
    const workerConnection = { url: config.redisUrl, maxRetriesPerRequest: null };
    const workers: Worker[] = [];
    const observe = (worker: Worker, queue: string) => {
      worker.on('completed', (job) => {
        metrics.jobsProcessed.inc({ queue, outcome: 'completed' });
        if (job.finishedOn && job.processedOn)
          metrics.jobSeconds.observe({ queue }, (job.finishedOn - job.processedOn) / 1000);
      });
      worker.on('failed', (job, err) => {
        metrics.jobsProcessed.inc({ queue, outcome: 'failed' });
        logger.warn({ err, queue, jobId: job?.id, attempts: job?.attemptsMade }, 'job failed');
      });
      worker.on('error', (err) => logger.error({ err, queue }, 'worker error'));
      workers.push(worker);
    };
    observe(
      new Worker(QUEUE.webhooks, webhookProcessor(ctx), {
        connection: workerConnection,
        prefix,
        // The processor applies the jobs it holds as batches (jobs/processWebhook.ts): the more
        // jobs at once, the larger the batches (16 gave 455 payments/s, 64 gave 563; benchmarks.md).
        concurrency: 64,
      }),
      'webhooks',
    );
    for (const store of config.stores) {
      observe(
        new Worker(QUEUE.polls(store.storeId), pollProcessor(ctx), {
          connection: workerConnection,
          prefix,
          concurrency: 8,
          limiter: { max: Math.max(1, Math.round(config.pollsPerSecond)), duration: 1000 },
        }),
        'polls',
      );
    }
    observe(
      new Worker(QUEUE.chain, chainProcessor(chain), {
        connection: workerConnection,
        prefix,
        concurrency: 4,
      }),
      'chain',
    );
    observe(
      new Worker(QUEUE.claimLinks, claimLinkProcessor(ctx, { refundGraceMs: config.refundGraceMs }), {
        connection: workerConnection,
        prefix,
        concurrency: 1,
      }),
      'claim-links',
    );
    observe(
      new Worker(QUEUE.alerts, alertProcessor(alerts), {
        connection: workerConnection,
        prefix,
        concurrency: 1,
      }),
      'alerts',
    );
    observe(
      new Worker(QUEUE.recon, reconProcessor({ db: database.db, config, rpcs, logger, clock, metrics }), {
        connection: workerConnection,
        prefix,
        concurrency: 1,
      }),
      'recon',
    );
    observe(
      new Worker(QUEUE.maintenance, maintenanceProcessor(ctx), {
        connection: workerConnection,
        prefix,
        concurrency: 1,
      }),
      'maintenance',
    );
    // Closing a worker waits for its in-flight jobs: the drain.
    shutdown.add('workers', () => Promise.all(workers.map((w) => w.close())));
  }

  if (roles.has('scheduler')) {
    const every = (ms: number) => Math.max(500, Math.round(ms * config.pollIntervalScale));
    const upsertSchedulers = async () => {
      for (const job of Object.values(maintenanceJobs)) {
        await maintenance.upsertJobScheduler(
          job.name,
          { every: every(job.everyMs) },
          { name: job.name, data: {} },
        );
      }
      for (const chainId of rpcs.keys()) {
        await chainQueue.upsertJobScheduler(
          chainJobs.index.schedulerId(chainId),
          { every: every(chainJobs.index.everyMs) },
          { name: chainJobs.index.name, data: { chainId } },
        );
      }
      for (const job of [chainJobs.verifyPayments, chainJobs.prove]) {
        await chainQueue.upsertJobScheduler(
          job.name,
          { every: every(job.everyMs) },
          { name: job.name, data: {} },
        );
      }
      for (const job of Object.values(claimLinkJobs)) {
        await claimLinks.upsertJobScheduler(
          job.name,
          { every: every(job.everyMs) },
          { name: job.name, data: {} },
        );
      }
      // A cron, not an interval: the run belongs to a calendar day (never scaled by POLL_INTERVAL_SCALE).
      await reconQueue.upsertJobScheduler(
        reconJobs.run.schedulerId,
        { pattern: config.reconCron, tz: 'UTC' },
        { name: reconJobs.run.name, data: {}, opts: reconJobs.run.options },
      );
      for (const job of Object.values(alertJobs)) {
        await alertsQueue.upsertJobScheduler(
          job.name,
          { every: every(job.everyMs) },
          { name: job.name, data: {} },
        );
      }
    };
    await upsertSchedulers();
    // A Redis that comes back empty (restarted without persistence, a failover to a replica that
    // lagged) has lost the schedulers, and with them the sweepers that re-enqueue what it lost:
    // put them back on every reconnect (upserting an existing scheduler changes nothing).
    producerConnection.on('ready', () => {
      upsertSchedulers().catch((err) =>
        logger.warn({ err }, 'could not restore the job schedulers; retrying at the next reconnect'),
      );
    });
  }

  const app = createHttpServer({
    metrics,
    ready: async () => {
      const pg = await database.db
        .execute(sql`select 1`)
        .then(() => true)
        .catch(() => false);
      const r = await producerConnection
        .ping()
        .then(() => true)
        .catch(() => false);
      return { postgres: pg, redis: r };
    },
  });
  await registerAdminQueues(app, {
    token: config.adminToken,
    queues: [webhooks, maintenance, chainQueue, claimLinks, alertsQueue, reconQueue, ...polled],
  });
  if (roles.has('intake')) {
    const inbox = createInboxWriter({
      db: database.db,
      logger,
      onBatch: ({ size, storeSeconds, enqueueSeconds }) => {
        metrics.inboxBatchWebhooks.observe(size);
        metrics.inboxBatchSeconds.observe({ step: 'store' }, storeSeconds);
        if (enqueueSeconds !== null) metrics.inboxBatchSeconds.observe({ step: 'enqueue' }, enqueueSeconds);
      },
      enqueueMany: (webhookIds) => addWebhookJobs(webhooks, webhookIds),
    });
    // Stopped after the HTTP server (parts stop in reverse order), which waits for in-flight
    // requests and so for their batches; this settles anything still queued before the queues
    // and the pool close, so nothing is written after the database is closed.
    shutdown.add('intake inbox', () => inbox.close());
    registerIntakeRoutes(app, {
      clock,
      storesByKey: new Map(config.stores.map((s) => [s.apiKey, s])),
      metrics,
      inbox,
    });
  }
  const url = await app.listen({ host: options.host ?? '0.0.0.0', port: options.port ?? config.port });
  shutdown.add('http', () => app.close());
  logger.info({ url, roles: [...roles] }, 'stablebooks started');

  return {
    url,
    metrics,
    stop: async () => {
      const results = await shutdown.run(options.drainTimeoutMs ?? 30_000);
      for (const r of results)
        if (r.error) logger.warn({ part: r.name, error: r.error }, 'shutdown step failed');
      logger.info('stablebooks stopped');
    },
  };
}
