import type { FastifyInstance } from 'fastify';
import { addWebhookJobs } from '../../jobs/addWebhookJobs.ts';
import { createInboxWriter } from '../intake/inboxWriter.ts';
import { registerIntakeRoutes } from '../intake/intakeRoutes.ts';
import type { DaemonPart, DaemonRuntime } from './daemonRuntime.ts';

/**
 * The intake role: the webhook routes on the daemon's HTTP server (verify, store in the inbox with
 * group commit, add each webhook's job, answer). stop() settles what the inbox writer still
 * holds; it runs after the HTTP server has closed (which waits for in-flight requests, and so for
 * their batches) and before the queues and the pool close, so nothing is written after them.
 */
export function startIntake(app: FastifyInstance, rt: DaemonRuntime): DaemonPart {
  const { config, metrics } = rt;
  const inbox = createInboxWriter({
    db: rt.database.db,
    logger: rt.logger,
    onBatch: ({ size, storeSeconds, enqueueSeconds }) => {
      metrics.inboxBatchWebhooks.observe(size);
      metrics.inboxBatchSeconds.observe({ step: 'store' }, storeSeconds);
      if (enqueueSeconds !== null) metrics.inboxBatchSeconds.observe({ step: 'enqueue' }, enqueueSeconds);
    },
    enqueueMany: (webhookIds) => addWebhookJobs(rt.queues.webhooks, webhookIds),
  });
  registerIntakeRoutes(app, {
    clock: rt.clock,
    storesByKey: new Map(config.stores.map((s) => [s.apiKey, s])),
    metrics,
    inbox,
    queueLimit: config.intakeQueueLimit,
  });
  return { stop: () => inbox.close() };
}
