import { type Job, Queue, Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { withRetryability } from '../../../jobs/withRetryability.ts';
import { InvalidEntryError } from '../../../src/ledger/errors.ts';
import { SvcTransportError } from '../../../src/svc/errors.ts';
import { testRedis } from '../../helpers/testRedis.ts';

/**
 * Every queue's processor runs inside withRetryability: on a real BullMQ queue in Redis, an error
 * that says no retry can help fails its job on the first attempt, however many attempts the job
 * has; a retryable one (ours or anyone's) spends them with the backoff.
 */
const redis = testRedis('retryability');
const connection = { url: redis.url, maxRetriesPerRequest: null };
const queue = new Queue('retryability', { connection, prefix: redis.prefix });

afterAll(async () => {
  await queue.obliterate({ force: true });
  await queue.close();
});

/** Runs one job of `attempts` attempts through a worker whose processor always throws `error`. */
async function failedJob(name: string, error: () => Error): Promise<{ job: Job; calls: number }> {
  let calls = 0;
  const worker = new Worker(
    'retryability',
    withRetryability(async (job) => {
      if (job.name !== name) return 'other';
      calls++;
      throw error();
    }),
    { connection, prefix: redis.prefix },
  );
  try {
    const failed = new Promise<Job>((resolve) => {
      worker.on('failed', (job) => {
        if (job && job.name === name && (job.finishedOn ?? 0) > 0) resolve(job);
      });
    });
    await queue.add(name, {}, { attempts: 4, backoff: { type: 'fixed', delay: 10 } });
    return { job: await failed, calls };
  } finally {
    await worker.close();
  }
}

describe('withRetryability', () => {
  it('behavior: a ledger error no retry can fix (InvalidEntryError) fails the job on its first attempt', async () => {
    const { job, calls } = await failedJob(
      'permanent',
      () => new InvalidEntryError('entry does not balance'),
    );
    expect(calls).toBe(1);
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toBe('entry does not balance');
  });

  it('behavior: a retryable error of ours spends every attempt', async () => {
    const { job, calls } = await failedJob(
      'retryable',
      () => new SvcTransportError('checkout_intents.get', true, 'socket hang up'),
    );
    expect(calls).toBe(4);
    expect(job.attemptsMade).toBe(4);
  });

  it('behavior: an error that is not ours (a dropped connection) is retried too', async () => {
    const { calls } = await failedJob('foreign', () => new Error('Connection terminated unexpectedly'));
    expect(calls).toBe(4);
  });
});
