import { type Job, UnrecoverableError } from 'bullmq';
import { coerceError } from '../src/errors/coerceError.ts';
import { isRetryable } from '../src/errors/stablebooksError.ts';

/** A queue's processor, as BullMQ calls it. */
export type Processor<R = unknown> = (job: Job, token?: string) => Promise<R>;

/**
 * Every queue's processor runs inside this: an error that says no retry can help (a
 * StablebooksError with `retryable` false: a refused request, an entry that cannot balance, an
 * unknown store) fails the job at once as BullMQ's UnrecoverableError, with the same message,
 * instead of spending every attempt; anything else goes back to BullMQ's
 * backoff. Processors still decide the cases that are neither (a rate limit's wait, a refusal
 * worth a few attempts) before they throw.
 */
export function withRetryability<R>(processor: Processor<R>): Processor<R> {
  return async (job, token) => {
    try {
      return await processor(job, token);
    } catch (err) {
      if (isRetryable(err)) throw err;
      throw new UnrecoverableError(coerceError(err).message);
    }
  };
}
