import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import type { JobContext } from '../../jobs/jobContext.ts';
import { queueKeyPause } from '../../jobs/keyPause.ts';
import { registerReadApi } from '../api/registerReadApi.ts';
import { createChainRpcs } from '../chain/rpcClients.ts';
import { type Clock, systemClock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import { createDomainContext } from '../context/domainContext.ts';
import { createDatabase } from '../db/database.ts';
import { createFollowedClock } from '../followedClock.ts';
import type { Logger } from '../logging/logger.ts';
import { attachCollectors } from '../metrics/collectors.ts';
import { initialiseLabels } from '../metrics/knownLabels.ts';
import { createMetrics, type Metrics } from '../metrics/metrics.ts';
import { registerAdminQueues } from './adminQueues.ts';
import { createDaemonQueues } from './daemonQueues.ts';
import type { DaemonRuntime } from './daemonRuntime.ts';
import { createOpsServer, createPublicServer } from './httpServer.ts';
import { startIntake } from './intake.ts';
import type { Role } from './roles.ts';
import { startSchedulers } from './schedulers.ts';
import { createShutdown, type Shutdown } from './shutdown.ts';
import { startWorkers } from './workers.ts';

/**
 * The daemon (`stablebooks start`). Roles:
 * - intake: the webhook routes (verify, store, enqueue, answer);
 * - worker: the BullMQ workers (webhook processing, polls, maintenance);
 * - scheduler: the job schedulers of the sweepers (BullMQ keeps exactly one per id).
 * Every process serves webhooks (intake role) and /healthz on PORT, and /healthz, /readyz, /metrics
 * and /admin/queues on OPS_PORT. Any number of processes of any role may
 * share one PostgreSQL and one Redis: job ids, the ledger's idempotency keys and row locks keep
 * every effect single.
 */

export interface DaemonOptions {
  config: Config;
  roles: Role[];
  logger: Logger;
  /** Public (webhook) port and address; default config.port on 0.0.0.0 (0 picks a free port). */
  port?: number;
  host?: string;
  /** Operations port and address; default config.opsPort on config.opsHost (0 picks a free port). */
  opsPort?: number;
  opsHost?: string;
  clock?: Clock;
  /** How long SIGTERM waits for in-flight jobs. */
  drainTimeoutMs?: number;
}

export interface RunningDaemon {
  /** The public server: webhooks and /healthz. */
  url: string;
  /** The operations server: /healthz, /readyz, /metrics, /admin/queues. */
  opsUrl: string;
  metrics: Metrics;
  stop(): Promise<void>;
}

export async function startDaemon(options: DaemonOptions): Promise<RunningDaemon> {
  const { config, logger } = options;
  const roles = new Set(options.roles);
  // Parts stop in the reverse order of their start: the public HTTP server first (no new work),
  // then the intake's inbox, the workers' drain, the operations server, the queues, Redis, the
  // pool and the clock.
  const shutdown = createShutdown();
  const rt = await createRuntime(options, shutdown);
  const ctx: JobContext = {
    domain: rt.domain,
    queues: { webhooks: rt.queues.webhooks, maintenance: rt.queues.maintenance, polls: rt.queues.polls },
    pollScale: config.pollIntervalScale,
    metrics: rt.metrics,
    logger,
    eventsDeliveryOn: config.eventsWebhookUrl !== undefined,
  };
  // The operations server starts first and stops last: /readyz and /metrics answer while the
  // workers drain.
  const ops = createOpsServer({ metrics: rt.metrics, ready: () => readiness(rt), limits: config.http });
  await registerAdminQueues(ops, {
    token: config.adminToken,
    write: config.adminWrite,
    cookieSecure: config.adminCookieSecure,
    queues: rt.queues.all(),
  });
  await registerReadApi(ops, { token: config.apiToken, domain: rt.domain, logger });
  const opsUrl = await ops.listen({
    host: options.opsHost ?? config.opsHost,
    port: options.opsPort ?? config.opsPort,
  });
  shutdown.add('ops http', () => ops.close());

  if (roles.has('worker')) shutdown.add('workers', startWorkers(rt, ctx).stop);
  if (roles.has('scheduler')) shutdown.add('schedulers', (await startSchedulers(rt)).stop);

  const app = createPublicServer({ metrics: rt.metrics, limits: config.http });
  if (roles.has('intake')) shutdown.add('intake inbox', startIntake(app, rt).stop);
  const url = await app.listen({ host: options.host ?? '0.0.0.0', port: options.port ?? config.port });
  shutdown.add('http', () => app.close());
  logger.info({ url, opsUrl, roles: [...roles] }, 'stablebooks started');

  return {
    url,
    opsUrl,
    metrics: rt.metrics,
    stop: async () => {
      const results = await shutdown.run(options.drainTimeoutMs ?? 30_000);
      for (const r of results)
        if (r.error) logger.warn({ part: r.name, error: r.error }, 'shutdown step failed');
      logger.info('stablebooks stopped');
    },
  };
}

/** What every role shares: clock, metrics, the pool, the producer connection, queues, the domain context. */
async function createRuntime(options: DaemonOptions, shutdown: Shutdown): Promise<DaemonRuntime> {
  const { config, logger } = options;
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
  // Before anything counts: every known series at 0, so rate() and absent() see them from start.
  initialiseLabels(metrics, config);
  const database = createDatabase(config.databaseUrl, {
    max: 10,
    applicationName: `stablebooks ${options.roles.join('+')}`,
    connectionTimeoutMs: config.pgConnectTimeoutMs,
    statementTimeoutMs: config.pgStatementTimeoutMs,
  });
  shutdown.add('postgres', () => database.close());

  // For adding jobs from the hot paths: fail fast when Redis is down (the sweepers catch up)
  // instead of queueing commands in memory.
  const redis = new Redis(config.redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: true,
  });
  redis.on('error', (err) => logger.debug({ err }, 'redis (producer) error'));
  redis
    .connect()
    .catch((err) => logger.warn({ err }, 'redis not reachable at start; webhooks are still stored'));
  shutdown.add('redis', async () => {
    redis.disconnect();
  });
  const queues = createDaemonQueues(redis, config.queuePrefix, logger);
  shutdown.add('queues', () => queues.close());
  for (const store of config.stores) queues.polls(store.storeId);
  attachCollectors(metrics, {
    db: database.db,
    queues: queues.all(),
    eventsDeliveryOn: config.eventsWebhookUrl !== undefined,
  });

  const domain = createDomainContext(config, {
    db: database.db,
    clock,
    logger,
    clientOptions: (storeId) => ({
      // A 40001 pauses the key for every process (the poll queue's rate limit) and is handed to
      // the job, which waits out the pause without spending an attempt.
      retry: { maxAttempts: 3, maxRetryAfterMs: 0 },
      keyPause: queueKeyPause(queues.polls(storeId)),
      onAttempt: (a) => {
        metrics.apiRequests.inc({ endpoint: a.endpoint, outcome: String(a.outcome) });
        metrics.apiRequestSeconds.observe({ endpoint: a.endpoint }, a.durationMs / 1000);
      },
    }),
  });
  const rpcs = createChainRpcs(config, metrics);
  return { config, logger, clock, metrics, database, redis, queues, domain, rpcs };
}

/** /readyz: PostgreSQL and Redis answer. */
async function readiness(rt: DaemonRuntime): Promise<Record<string, boolean>> {
  const postgres = await rt.database.db
    .execute(sql`select 1`)
    .then(() => true)
    .catch(() => false);
  const redis = await rt.redis
    .ping()
    .then(() => true)
    .catch(() => false);
  return { postgres, redis };
}
