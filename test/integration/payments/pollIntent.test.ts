import { type Job, Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import type { JobContext } from '../../../jobs/jobContext.ts';
import { maintenanceProcessor } from '../../../jobs/maintenance.ts';
import { pollNumberOf, pollProcessor } from '../../../jobs/pollIntent.ts';
import { maintenanceJobs, pollJob, QUEUE } from '../../../jobs/queues.ts';
import { schedulePoll } from '../../../jobs/schedulePoll.ts';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { DomainContext } from '../../../src/context/domainContext.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import { createLogger } from '../../../src/logging/logger.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import type { SvcClient } from '../../../src/svc/client.ts';
import { CheckoutStatus } from '../../../src/svc/models/checkoutStatus.ts';
import { startTestSandbox } from '../../helpers/sandboxHarness.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { testRedis } from '../../helpers/testRedis.ts';

/**
 * The chain of polls of one intent, on real PostgreSQL, Redis (BullMQ) and the sandbox: a poll
 * whose read fails after it counted itself is retried while a webhook or the sweeper schedules the
 * next poll; the retry must count once and leave exactly one next poll, whichever runs first.
 * The processor is called with the queue's own jobs, in the order a race would take.
 */
const { db } = await createMigratedDatabase('pollchain');
const { url, prefix } = testRedis('pollchain');
const sandbox = await startTestSandbox();
const queue = new Queue(QUEUE.polls('st_a'), { connection: { url }, prefix });
afterAll(async () => {
  await queue.obliterate({ force: true });
  await queue.close();
});

const real = sandbox.client('st_a');
/** Hooks around the full read of an intent, to fail it or to record something while it travels. */
const hooks: { beforeRead?: () => Promise<void>; whileReading?: () => Promise<void> } = {};
const client: SvcClient = {
  ...real,
  async getCheckoutIntent(id) {
    await hooks.beforeRead?.();
    const read = await real.getCheckoutIntent(id);
    await hooks.whileReading?.();
    return read;
  },
};
const payments: DomainContext = {
  db,
  chains: createChainRegistry(),
  stores: [],
  accounts: createAccountCache(),
  encryptionKey: Buffer.alloc(32),
  client: () => client,
  clock: { now: () => new Date() },
  logger: createLogger({ level: 'silent' }),
};
const ctx = {
  domain: payments,
  queues: { polls: () => queue },
  pollScale: 1,
  metrics: createMetrics(),
  logger: payments.logger,
} as unknown as JobContext;
const run = pollProcessor(ctx);

/** The next full read answers 90000 (HTTP 500), as the service does in a bad moment. */
function failNextRead(): void {
  hooks.beforeRead = async () => {
    hooks.beforeRead = undefined;
    await sandbox.control('/_sandbox/faults', { error_next: { code: 90000, count: 1 } });
  };
}

/** A tracked intent whose first poll the service refused (30001, as for another store's intent). */
async function refusedIntent(): Promise<string> {
  const id = await trackedIntent();
  await schedulePoll(ctx, 'st_a', id, 0);
  const job = await pollJobOf(id, 0);
  await sandbox.control('/_sandbox/faults', { error_next: { code: 30001, count: 1 } });
  await expect(run(job)).rejects.toThrow(/30001/);
  await job.remove();
  return id;
}

/** A new intent at the sandbox, tracked as `intents create` leaves it: never read, never polled. */
async function trackedIntent(): Promise<string> {
  const { allsvc_checkout_intent_id: id } = await real.createCheckoutIntent({
    stable_coin: 1,
    amount_cents: 2500n,
  });
  await db.execute(sql`
    insert into checkout_intents (id, store_id, tracked_via, tracked_at) values (${id}, 'st_a', 'create', now())`);
  return id;
}

async function pollJobOf(id: string, n: number) {
  const job = await queue.getJob(pollJob.jobId(id, n));
  if (!job) throw new Error(`no job ${pollJob.jobId(id, n)}`);
  return job;
}

/** The ids of the intent's polls still to run. */
async function pendingPolls(id: string): Promise<string[]> {
  const jobs = await queue.getJobs(['waiting', 'delayed', 'prioritized']);
  return jobs
    .map((j) => j.id ?? '')
    .filter((jobId) => jobId.startsWith(`poll.${id}.`))
    .sort();
}

async function pollCount(id: string): Promise<number> {
  const { rows } = await db.execute<{ poll_count: number }>(
    sql`select poll_count from checkout_intents where id = ${id}`,
  );
  return rows[0]?.poll_count ?? -1;
}

describe('poll chain', () => {
  it('behavior: a retried poll raced by schedulePoll leaves exactly one next poll (the retry runs first)', async () => {
    const id = await trackedIntent();
    await schedulePoll(ctx, 'st_a', id, 0);
    const first = await pollJobOf(id, 0);
    expect(first.data).toMatchObject({ intentId: id, storeId: 'st_a', n: 0 });

    failNextRead();
    await expect(run(first)).rejects.toThrow(/90000/); // attempt 1: counted, then the read failed
    expect(await pollCount(id)).toBe(1);
    // Meanwhile a webhook (intent not settled) or the sweeper schedules "the next poll".
    await schedulePoll(ctx, 'st_a', id, 60_000);
    await expect(run(first)).resolves.toBe('scheduled'); // attempt 2 of the same job
    await first.remove(); // done, as a worker would complete it

    expect(await pollCount(id)).toBe(1);
    expect(await pendingPolls(id)).toEqual([pollJob.jobId(id, 1)]);
  });

  it('behavior: a retried poll raced by schedulePoll leaves exactly one next poll (the raced poll runs first and is gone)', async () => {
    const id = await trackedIntent();
    await schedulePoll(ctx, 'st_a', id, 0);
    const first = await pollJobOf(id, 0);
    failNextRead();
    await expect(run(first)).rejects.toThrow(/90000/);

    await schedulePoll(ctx, 'st_a', id, 0);
    const second = await pollJobOf(id, 1);
    await expect(run(second)).resolves.toBe('scheduled'); // reads CREATED, schedules poll 2
    // Completed and no longer kept (removeOnComplete keeps the latest 1000 of the store's queue).
    await second.remove();
    // Poll 0 waits for its retry; poll 2 is the chain's next.
    expect(await pendingPolls(id)).toEqual([pollJob.jobId(id, 0), pollJob.jobId(id, 2)]);

    await expect(run(first)).resolves.toBe('scheduled'); // the retry joins the chain
    await first.remove();
    expect(await pollCount(id)).toBe(2);
    expect(await pendingPolls(id)).toEqual([pollJob.jobId(id, 2)]);
  });

  it('behavior: "poll now" brings forward the next poll already waiting on the slow schedule', async () => {
    const id = await trackedIntent();
    await schedulePoll(ctx, 'st_a', id, 10 * 60_000);
    expect(await (await pollJobOf(id, 0)).getState()).toBe('delayed');
    // A webhook whose API read did not settle the intent asks for a poll now.
    await schedulePoll(ctx, 'st_a', id, 0);
    // Before: the add was ignored (same job id) and the poll still waited its ten minutes.
    expect(await (await pollJobOf(id, 0)).getState()).toBe('waiting');
    expect(await pendingPolls(id)).toEqual([pollJob.jobId(id, 0)]);
    await (await pollJobOf(id, 0)).remove();
  });

  it('behavior: a poll job queued without n in its data takes it from its id', () => {
    const id = 'aa0000000000000000000001';
    expect(pollNumberOf({ id: pollJob.jobId(id, 7), data: { intentId: id, storeId: 'st_a' } }, id)).toBe(7);
    expect(
      pollNumberOf({ id: pollJob.jobId(id, 7), data: { intentId: id, storeId: 'st_a', n: 3 } }, id),
    ).toBe(3);
    expect(pollNumberOf({ id: 'something-else.4', data: {} }, id)).toBeUndefined();
    expect(pollNumberOf({ id: undefined, data: {} }, id)).toBeUndefined();
  });

  it('error: a read the service refuses opens intent_poll_refused; the next read resolves it', async () => {
    const id = await refusedIntent();
    const state = async () =>
      (
        await db.execute<{ open: string | null; code: number | null }>(sql`
          select f.kind as open, (f.details->>'code')::int as code
          from checkout_intents c
          left join findings f on f.ref_type = 'checkout_intent' and f.ref_id = c.id and f.resolved_at is null
          where c.id = ${id}`)
      ).rows[0];
    // Before: no finding; the sweeper re-polled the intent every minute, failing each time, and
    // nobody was told.
    expect(await state()).toEqual({ open: 'intent_poll_refused', code: 30001 });
    expect(await pendingPolls(id)).toEqual([]);

    // The sweeper's next try reads the intent: the finding resolves and the chain goes on.
    await schedulePoll(ctx, 'st_a', id, 0, 0);
    await expect(run(await pollJobOf(id, 0))).resolves.toBe('scheduled');
    expect(await state()).toEqual({ open: null, code: null });
  });

  it("behavior: a poll's read is dated when it was sent: a cancel recorded while it travelled is not overturned", async () => {
    const id = await trackedIntent();
    const paid = await sandbox.control(`/_sandbox/intents/${id}/pay`, {});
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(await real.getCheckoutIntentStatus(id)).toBe(CheckoutStatus.CONFIRMED);
    await schedulePoll(ctx, 'st_a', id, 0);
    const job = await pollJobOf(id, 0);

    // The service answers CONFIRMED; while the answer travels, another observer records CANCELED
    // (read after ours, so newer), then our answer arrives.
    hooks.whileReading = async () => {
      hooks.whileReading = undefined;
      const read = await real.getCheckoutIntent(id);
      await new Promise((r) => setTimeout(r, 20));
      await db.transaction((tx) =>
        applyIntentSnapshot(tx, payments, {
          storeId: 'st_a',
          intent: { ...read, status: CheckoutStatus.CANCELED },
          source: 'poll',
          observedAt: new Date(),
        }),
      );
      await new Promise((r) => setTimeout(r, 20));
    };
    await expect(run(job)).resolves.toBe('settled');
    await job.remove();

    const { rows } = await db.execute<{ status: number }>(
      sql`select status from checkout_intents where id = ${id}`,
    );
    expect(rows[0]?.status).toBe(CheckoutStatus.CANCELED);
    const entries = await db.execute(sql`select 1 from ledger_entries where ref_id = ${id}`);
    expect(entries.rows).toEqual([]);
    expect(await pendingPolls(id)).toEqual([]);
  });

  it('behavior: a refused intent that a webhook settles is polled no more, and the poll sweeper resolves its intent_poll_refused', async () => {
    const id = await refusedIntent();
    const open = async () =>
      (
        await db.execute<{ kind: string }>(sql`
          select kind from findings where ref_type = 'checkout_intent' and ref_id = ${id} and resolved_at is null`)
      ).rows.map((r) => r.kind);
    expect(await open()).toEqual(['intent_poll_refused']);

    // The webhook settles it (cancelled). Before: the finding stayed open for good, since only a
    // successful poll resolved it and a settled intent is never polled again.
    const read = await real.getCheckoutIntent(id);
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, payments, {
        storeId: 'st_a',
        intent: { ...read, status: CheckoutStatus.CANCELED },
        source: 'webhook',
        observedAt: new Date(),
      }),
    );
    expect(await open()).toEqual(['intent_poll_refused']);
    await maintenanceProcessor(ctx)({ name: maintenanceJobs.sweepPolls.name } as Job);
    expect(await open()).toEqual([]);
    expect(await pendingPolls(id)).toEqual([]);
  });
});
