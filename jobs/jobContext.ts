import type { Queue } from 'bullmq';
import type { Logger } from '../src/logging/logger.ts';
import type { Metrics } from '../src/metrics/metrics.ts';
import type { PaymentsDeps } from '../src/payments/paymentsDeps.ts';

/** What the processors share: the domain's dependencies and the queues they add follow-up jobs to. */
export interface JobContext {
  payments: PaymentsDeps;
  queues: { webhooks: Queue; maintenance: Queue; polls(storeId: string): Queue };
  /** Multiplies every poll interval (1 in production; small in tests and the demo). */
  pollScale: number;
  metrics: Metrics;
  logger: Logger;
}
