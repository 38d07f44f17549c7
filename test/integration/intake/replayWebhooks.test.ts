import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { webhookJob } from '../../../jobs/queues.ts';
import { requeueWebhookJobs } from '../../../jobs/requeueWebhookJobs.ts';
import { replayWebhooks } from '../../../src/intake/replayWebhooks.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { testRedis } from '../../helpers/testRedis.ts';

/**
 * The two halves of `stablebooks webhooks replay` on real PostgreSQL and Redis: which inbox rows
 * are reset (all or nothing), and that each gets a job that runs, whatever BullMQ still holds
 * under the webhook's job id.
 */
const { db } = await createMigratedDatabase('replay_webhooks');

type Status = 'received' | 'rejected' | 'processed' | 'failed';

async function insertRow(
  status: Status,
  patch: { storeId?: string; receivedAt?: string; error?: string } = {},
): Promise<string> {
  const id = `wh_${randomUUID()}`;
  await db.execute(sql`
    insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body, received_at, processed_at, attempts, error)
    values (${id}, ${patch.storeId ?? 'st_a'}, 'checkout', ${status}, '{"x-webhook-signature":"sig"}'::jsonb,
            ${Buffer.from('{}')}, ${patch.receivedAt ?? new Date().toISOString()}::timestamptz,
            ${status === 'received' ? null : new Date().toISOString()}::timestamptz, 1, ${patch.error ?? null})`);
  return id;
}

async function rowOf(id: string) {
  const { rows } = await db.execute<{ status: string; processed_at: Date | null; error: string | null }>(
    sql`select status, processed_at, error from webhook_inbox where webhook_id = ${id}`,
  );
  return rows[0];
}

describe('replayWebhooks: which rows go back to received', () => {
  it('behavior: named failed and processed rows are reset, a received one is left as it is', async () => {
    const failed = await insertRow('failed', { error: 'intent 50001' });
    const processed = await insertRow('processed');
    const received = await insertRow('received');
    const outcome = await replayWebhooks(db, {
      kind: 'ids',
      webhookIds: [failed, processed, received, failed],
    });
    expect(outcome.kind).toBe('replayed');
    if (outcome.kind !== 'replayed') return;
    expect(outcome.webhooks.map((w) => [w.webhookId, w.previousStatus]).sort()).toEqual(
      [
        [failed, 'failed'],
        [processed, 'processed'],
        [received, 'received'],
      ].sort(),
    );
    expect(outcome.webhooks.find((w) => w.webhookId === failed)?.lastError).toBe('intent 50001');
    // The last error stays until a new attempt succeeds; the processing time is gone.
    expect(await rowOf(failed)).toEqual({ status: 'received', processed_at: null, error: 'intent 50001' });
    expect((await rowOf(processed))?.status).toBe('received');
    expect((await rowOf(received))?.status).toBe('received');
  });

  it('error: an unknown id refuses the whole replay, nothing changed', async () => {
    const failed = await insertRow('failed');
    const outcome = await replayWebhooks(db, { kind: 'ids', webhookIds: [failed, 'wh_nobody'] });
    expect(outcome).toEqual({ kind: 'refused', unknown: ['wh_nobody'], rejected: [] });
    expect((await rowOf(failed))?.status).toBe('failed');
  });

  it('error: a rejected row cannot be replayed, nothing changed', async () => {
    const failed = await insertRow('failed');
    const rejected = await insertRow('rejected');
    const outcome = await replayWebhooks(db, { kind: 'ids', webhookIds: [failed, rejected] });
    expect(outcome).toEqual({ kind: 'refused', unknown: [], rejected: [rejected] });
    expect((await rowOf(failed))?.status).toBe('failed');
    expect((await rowOf(rejected))?.status).toBe('rejected');
  });

  it('behavior: --failed takes only failed rows, by store and since, oldest first, up to the limit', async () => {
    const old = await insertRow('failed', { storeId: 'st_f', receivedAt: '2026-01-01T00:00:00Z' });
    const a = await insertRow('failed', { storeId: 'st_f', receivedAt: '2026-02-01T00:00:00Z' });
    const b = await insertRow('failed', { storeId: 'st_f', receivedAt: '2026-02-02T00:00:00Z' });
    const c = await insertRow('failed', { storeId: 'st_f', receivedAt: '2026-02-03T00:00:00Z' });
    const otherStore = await insertRow('failed', { storeId: 'st_g', receivedAt: '2026-02-01T00:00:00Z' });
    const processed = await insertRow('processed', { storeId: 'st_f', receivedAt: '2026-02-01T00:00:00Z' });
    const rejected = await insertRow('rejected', { storeId: 'st_f', receivedAt: '2026-02-01T00:00:00Z' });
    const selection = {
      kind: 'failed' as const,
      storeId: 'st_f',
      since: new Date('2026-01-15T00:00:00Z'),
      limit: 2,
    };

    const dry = await replayWebhooks(db, selection, { dryRun: true });
    expect(dry).toMatchObject({ kind: 'replayed', more: true });
    if (dry.kind !== 'replayed') return;
    expect(dry.webhooks.map((w) => w.webhookId)).toEqual([a, b]);
    expect((await rowOf(a))?.status).toBe('failed');

    const first = await replayWebhooks(db, selection);
    expect(first.kind === 'replayed' && first.webhooks.map((w) => w.webhookId)).toEqual([a, b]);
    // Replayed rows are no longer failed, so running it again takes the next ones.
    const second = await replayWebhooks(db, selection);
    expect(second).toMatchObject({ kind: 'replayed', more: false });
    expect(second.kind === 'replayed' && second.webhooks.map((w) => w.webhookId)).toEqual([c]);
    for (const [id, status] of [
      [old, 'failed'],
      [otherStore, 'failed'],
      [processed, 'processed'],
      [rejected, 'rejected'],
    ] as const)
      expect((await rowOf(id))?.status, id).toBe(status);
  });
});

describe('requeueWebhookJobs: a job that runs, whatever BullMQ still holds', () => {
  const redis = testRedis('replay');
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  const prefix = redis.prefix.replace(/:$/, '');
  const queue = new Queue('webhooks', { connection, prefix });
  afterAll(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    connection.disconnect();
  });

  /** Runs the queue's jobs with `processor` until `count` of them finished (completed or failed). */
  async function drain(processor: (id: string) => Promise<void>, count: number): Promise<string[]> {
    const seen: string[] = [];
    let finished = 0;
    let done: () => void = () => {};
    const all = new Promise<void>((resolve) => {
      done = resolve;
    });
    const worker = new Worker(
      'webhooks',
      async (job) => {
        const { webhookId } = webhookJob.data.parse(job.data);
        seen.push(webhookId);
        await processor(webhookId);
      },
      { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix },
    );
    const count1 = () => {
      finished += 1;
      if (finished >= count) done();
    };
    worker.on('completed', count1);
    worker.on('failed', count1);
    await all;
    await worker.close();
    return seen;
  }

  const add = (id: string, attempts = 1) =>
    queue.add(
      webhookJob.name,
      { webhookId: id },
      { ...webhookJob.options, attempts, jobId: webhookJob.jobId(id) },
    );

  it('behavior: completed and failed jobs are replaced, so the webhook runs again; a plain add would not', async () => {
    const completed = 'wh.done:1';
    const failed = 'wh-failed/2';
    await add(completed);
    await add(failed);
    await drain(async (id) => {
      if (id === failed) throw new Error('boom');
    }, 2);
    expect(await (await queue.getJob(webhookJob.jobId(completed)))?.getState()).toBe('completed');
    expect(await (await queue.getJob(webhookJob.jobId(failed)))?.getState()).toBe('failed');

    // What the intake and the sweeper do: BullMQ ignores the add, the finished job stays finished.
    await add(completed);
    expect(await (await queue.getJob(webhookJob.jobId(completed)))?.getState()).toBe('completed');

    const outcomes = await requeueWebhookJobs(queue, [completed, failed, 'wh_new']);
    expect(Object.fromEntries(outcomes)).toEqual({
      [completed]: 'replaced',
      [failed]: 'replaced',
      wh_new: 'added',
    });
    for (const id of [completed, failed, 'wh_new'])
      expect(await (await queue.getJob(webhookJob.jobId(id)))?.getState(), id).toBe('waiting');
    const ran = await drain(async () => {}, 3);
    expect(ran.sort()).toEqual([completed, failed, 'wh_new'].sort());
  });

  it('behavior: a waiting job is left to run once; a delayed one runs now', async () => {
    const waiting = `wh_${randomUUID()}`;
    const delayed = `wh_${randomUUID()}`;
    await add(waiting);
    await queue.add(
      webhookJob.name,
      { webhookId: delayed },
      { ...webhookJob.options, jobId: webhookJob.jobId(delayed), delay: 3_600_000 },
    );
    const outcomes = await requeueWebhookJobs(queue, [waiting, delayed]);
    expect(Object.fromEntries(outcomes)).toEqual({ [waiting]: 'queued', [delayed]: 'promoted' });
    expect(await queue.getJobCounts('waiting', 'delayed')).toEqual({ waiting: 2, delayed: 0 });
    expect((await drain(async () => {}, 2)).sort()).toEqual([waiting, delayed].sort());
  });

  it('error: a job that keeps running is reported, not duplicated', async () => {
    const busy = `wh_${randomUUID()}`;
    await add(busy);
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const worker = new Worker('webhooks', () => held, {
      connection: { url: redis.url, maxRetriesPerRequest: null },
      prefix,
    });
    try {
      const job = (await queue.getJob(webhookJob.jobId(busy)))!;
      for (let i = 0; i < 100 && (await job.getState()) !== 'active'; i++)
        await new Promise((r) => setTimeout(r, 50));
      await expect(requeueWebhookJobs(queue, [busy], { activeWaitMs: 300 })).rejects.toThrow(
        /its job is still running/,
      );
      // Once it finishes, the replay goes through.
      release();
      for (let i = 0; i < 100 && (await job.getState()) !== 'completed'; i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(Object.fromEntries(await requeueWebhookJobs(queue, [busy]))).toEqual({ [busy]: 'replaced' });
    } finally {
      release();
      await worker.close();
    }
  });
});
