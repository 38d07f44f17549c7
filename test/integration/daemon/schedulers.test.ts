import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { chainJobs } from '../../../jobs/queues.ts';
import type { ChainRpc } from '../../../src/chain/rpcClients.ts';
import { chainsFileSchema, createChainRegistry } from '../../../src/config/chainRegistry.ts';
import { createDaemonQueues } from '../../../src/daemon/daemonQueues.ts';
import { startSchedulers } from '../../../src/daemon/schedulers.ts';
import { createLogger } from '../../../src/logging/logger.ts';
import { testRedis } from '../../helpers/testRedis.ts';

/**
 * The scheduler role on a real Redis: each chain's indexer pass is scheduled at that chain's own
 * interval (its finality window, src/chain/indexPassInterval.ts), scaled like every other.
 */
const { url, prefix } = testRedis('schedulers');
const redis = new Redis(url, { maxRetriesPerRequest: null });
const logger = createLogger({ level: 'silent' });
const queues = createDaemonQueues(redis, prefix, logger);
afterAll(async () => {
  await Promise.all(queues.all().map((q) => q.obliterate({ force: true })));
  await queues.close();
  redis.disconnect();
});

describe('job schedulers', () => {
  it('behavior: one chain.index scheduler per chain, every finality window of its own (Base 60 s, a 1 s chain of 30 blocks 30 s, BNB 22.5 s)', async () => {
    const chains = createChainRegistry(
      chainsFileSchema.parse([{ chain_id: 31337, block_time_ms: 1000, finality: { depth: 30 } }]),
    );
    // Only the keys are read: which chains have RPC URLs.
    const rpcs = new Map<number, ChainRpc>([8453, 31337, 56].map((id) => [id, { chainId: id } as ChainRpc]));
    const part = await startSchedulers({
      config: { pollIntervalScale: 1, chains, reconCron: '0 1 * * *', eventsWebhookUrl: undefined },
      queues,
      logger,
      redis,
      rpcs,
    });
    try {
      const schedulers = await queues.chain.getJobSchedulers();
      const every = Object.fromEntries(
        schedulers.filter((s) => s.name === chainJobs.index.name).map((s) => [s.key, Number(s.every)]),
      );
      expect(every).toEqual({
        [chainJobs.index.schedulerId(8453)]: 60_000,
        [chainJobs.index.schedulerId(31337)]: 30_000,
        [chainJobs.index.schedulerId(56)]: 22_500,
      });
    } finally {
      await part.stop();
    }
  });

  it('behavior: every interval scheduler keeps only its last 100 completed runs (1,000 failed), not each run for ever', async () => {
    const chains = createChainRegistry();
    const part = await startSchedulers({
      config: { pollIntervalScale: 1, chains, reconCron: '0 1 * * *', eventsWebhookUrl: undefined },
      queues,
      logger,
      redis,
      rpcs: new Map<number, ChainRpc>([[8453, { chainId: 8453 } as ChainRpc]]),
    });
    try {
      const kept = [];
      for (const queue of [queues.maintenance, queues.chain, queues.claimLinks, queues.alerts]) {
        for (const s of await queue.getJobSchedulers()) {
          kept.push([s.key, s.template?.opts?.removeOnComplete, s.template?.opts?.removeOnFail]);
        }
      }
      expect(kept.length).toBeGreaterThan(8);
      expect(kept.filter(([, complete, failed]) => complete !== 100 || failed !== 1000)).toEqual([]);
    } finally {
      await part.stop();
    }
  });
});
