import {
  alertJobs,
  chainJobs,
  claimLinkJobs,
  eventJobs,
  maintenanceJobs,
  reconJobs,
} from '../../jobs/queues.ts';
import { indexPassIntervalMs, MAX_PASS_INTERVAL_MS } from '../chain/indexPassInterval.ts';
import type { Config } from '../config/loadConfig.ts';
import type { DaemonPart, DaemonRuntime } from './daemonRuntime.ts';

/** What the schedulers read of the daemon's runtime. */
export type SchedulerRuntime = Pick<DaemonRuntime, 'queues' | 'logger' | 'redis' | 'rpcs'> & {
  config: Pick<Config, 'pollIntervalScale' | 'chains' | 'reconCron' | 'eventsWebhookUrl'>;
};

/**
 * The scheduler role: the job schedulers of the sweepers, the chain passes, the claim-link checks,
 * the alert evaluation and the reconciliation run (BullMQ keeps exactly one per id, however many
 * processes upsert it). A Redis that comes back empty (restarted without persistence, a failover
 * to a replica that lagged) has lost the schedulers, and with them the sweepers that re-enqueue
 * what it lost: they are put back on every reconnect (upserting an existing one changes nothing).
 */
export async function startSchedulers(rt: SchedulerRuntime): Promise<DaemonPart> {
  const { config, queues, logger } = rt;
  const every = (ms: number) => Math.max(500, Math.round(ms * config.pollIntervalScale));
  // Each run is a job of its own id: kept for ever, an idle daemon's schedulers (ledger.seal alone
  // 17,280 a day) grew Redis without end. The last 100 (1,000 failed) stay for /admin/queues.
  const opts = { removeOnComplete: 100, removeOnFail: 1000 };
  const upsertSchedulers = async () => {
    for (const job of Object.values(maintenanceJobs)) {
      await queues.maintenance.upsertJobScheduler(
        job.name,
        { every: every(job.everyMs) },
        { name: job.name, data: {}, opts },
      );
    }
    for (const chainId of rt.rpcs.keys()) {
      // A chain with RPC URLs that the registry lacks: each pass fails saying to add it to
      // CHAINS_FILE (indexChainPass); once a minute is often enough to say so.
      const info = config.chains.chain(chainId);
      const interval = info ? indexPassIntervalMs(info) : MAX_PASS_INTERVAL_MS;
      await queues.chain.upsertJobScheduler(
        chainJobs.index.schedulerId(chainId),
        { every: every(interval) },
        { name: chainJobs.index.name, data: { chainId }, opts },
      );
    }
    for (const job of [chainJobs.verifyPayments, chainJobs.prove]) {
      await queues.chain.upsertJobScheduler(
        job.name,
        { every: every(job.everyMs) },
        { name: job.name, data: {}, opts },
      );
    }
    for (const job of Object.values(claimLinkJobs)) {
      await queues.claimLinks.upsertJobScheduler(
        job.name,
        { every: every(job.everyMs) },
        { name: job.name, data: {}, opts },
      );
    }
    // A cron, not an interval: the run belongs to a calendar day (never scaled by POLL_INTERVAL_SCALE).
    await queues.recon.upsertJobScheduler(
      reconJobs.run.schedulerId,
      { pattern: config.reconCron, tz: 'UTC' },
      { name: reconJobs.run.name, data: {}, opts: reconJobs.run.options },
    );
    for (const job of Object.values(alertJobs)) {
      await queues.alerts.upsertJobScheduler(
        job.name,
        { every: every(job.everyMs) },
        { name: job.name, data: {}, opts },
      );
    }
    // Outbound events only while EVENTS_WEBHOOK_URL is set; a scheduler an earlier configuration left goes.
    if (config.eventsWebhookUrl) {
      await queues.events.upsertJobScheduler(
        eventJobs.deliver.name,
        { every: every(eventJobs.deliver.everyMs) },
        { name: eventJobs.deliver.name, data: {} },
      );
    } else {
      await queues.events.removeJobScheduler(eventJobs.deliver.name);
    }
  };
  await upsertSchedulers();
  const restore = () => {
    upsertSchedulers().catch((err) =>
      logger.warn({ err }, 'could not restore the job schedulers; retrying at the next reconnect'),
    );
  };
  rt.redis.on('ready', restore);
  return {
    stop: async () => {
      rt.redis.off('ready', restore);
    },
  };
}
