import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUE } from '../../jobs/queues.ts';
import type { Logger } from '../logging/logger.ts';

/** The daemon's queues, on the producer connection (jobs are added from every role). */
export interface DaemonQueues {
  webhooks: Queue;
  maintenance: Queue;
  chain: Queue;
  claimLinks: Queue;
  alerts: Queue;
  recon: Queue;
  events: Queue;
  /** The poll queue of one store (its API key's rate limit), made on first use. */
  polls(storeId: string): Queue;
  /** Every queue made so far, for the collectors and the admin dashboard. */
  all(): Queue[];
  close(): Promise<void>;
}

export function createDaemonQueues(connection: Redis, prefix: string, logger: Logger): DaemonQueues {
  const options = { connection, prefix };
  // Without a listener BullMQ prints every connection error of a queue to stderr; the producer
  // connection's own listener already reports them.
  const make = (name: string) => {
    const queue = new Queue(name, options);
    queue.on('error', (err) => logger.debug({ err, queue: queue.name }, 'queue error'));
    return queue;
  };
  const fixed = {
    webhooks: make(QUEUE.webhooks),
    maintenance: make(QUEUE.maintenance),
    chain: make(QUEUE.chain),
    claimLinks: make(QUEUE.claimLinks),
    alerts: make(QUEUE.alerts),
    recon: make(QUEUE.recon),
    events: make(QUEUE.events),
  };
  const polls = new Map<string, Queue>();
  const all = () => [...Object.values(fixed), ...polls.values()];
  return {
    ...fixed,
    polls(storeId) {
      let queue = polls.get(storeId);
      if (!queue) {
        queue = make(QUEUE.polls(storeId));
        polls.set(storeId, queue);
      }
      return queue;
    },
    all,
    close: async () => {
      await Promise.all(all().map((q) => q.close()));
    },
  };
}
