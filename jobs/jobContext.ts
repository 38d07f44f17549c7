import type { Queue } from 'bullmq';
import type { DomainContext } from '../src/context/domainContext.ts';
import type { Logger } from '../src/logging/logger.ts';
import type { Metrics } from '../src/metrics/metrics.ts';

/** What the processors share: the domain's dependencies and the queues they add follow-up jobs to. */
export interface JobContext {
  domain: DomainContext;
  queues: { webhooks: Queue; maintenance: Queue; polls(storeId: string): Queue };
  /** Multiplies every poll interval (1 in production; small in tests and the demo). */
  pollScale: number;
  metrics: Metrics;
  logger: Logger;
  /** The poll schedule's jitter (Math.random unless given: the simulator gives the seed's). */
  random?: () => number;
  /** Whether outbound events are delivered (EVENTS_WEBHOOK_URL set): the outbox prune keeps undelivered ones then. */
  eventsDeliveryOn?: boolean;
}
