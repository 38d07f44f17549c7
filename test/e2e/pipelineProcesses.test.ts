import { describe, expect, it } from 'vitest';
import { type EphemeralRedis, startEphemeralRedis } from '../../src/devservices/redis.ts';
import type { DaemonProcess } from '../helpers/daemonProcess.ts';
import {
  elapsed,
  expectExactlyOnce,
  inboxCounts,
  startProcessCluster,
  waitFor,
} from '../helpers/processCluster.ts';

/**
 * The payments pipeline in real processes (test/helpers/processCluster.ts): crashes (SIGKILL of
 * a worker), two workers at once, Redis gone during intake and SIGTERM's drain must all end with
 * each payment posted exactly once. PostgreSQL outages and the other roles' crashes are in
 * test/e2e/processOutages.test.ts.
 */
const { intakePort, payIntents, deliveriesOf, activeJobs, setup, kill } = await startProcessCluster();
const terminate = (proc: DaemonProcess) => kill(proc, 'SIGTERM');

describe('payments pipeline in real processes', () => {
  it('behavior: a worker killed (SIGKILL) in the middle of 500 webhooks and started again posts each payment once', async () => {
    const t0 = performance.now();
    const s = await setup('sigkill');
    const [intake] = await Promise.all([
      s.start('intake', 'intake', intakePort),
      s.start('scheduler', 'scheduler'),
    ]);
    // Half the payments arrive before any worker runs, so the worker starts on a backlog and is
    // killed with a full set of jobs in flight while webhooks keep coming.
    let workerStarted: Promise<DaemonProcess> | undefined;
    const paying = payIntents(500, (paid) => {
      if (paid === 250) workerStarted = s.start('worker-1', 'worker');
    });
    await waitFor('250 paid', async () => workerStarted, 120_000);
    const worker1 = await workerStarted!;
    const atKill = await waitFor(
      '100 webhooks processed',
      async () => {
        const c = await inboxCounts(s.db);
        return c.processed >= 100 ? c : undefined;
      },
      60_000,
    );
    const killed = await kill(worker1, 'SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    const afterKill = await inboxCounts(s.db);
    // The killed worker had jobs in flight: they stay active until their lock expires.
    const held = await activeJobs(s.queuePrefix);
    console.log(
      `sigkill: worker killed at ${atKill.processed} processed of ${atKill.total} stored (${afterKill.processed} after the kill), ${held} jobs in flight`,
    );
    expect(held).toBeGreaterThan(0);
    expect(afterKill.processed).toBeLessThan(500);
    const ids = await paying;
    const worker2 = await s.start('worker-2', 'worker');
    // Jobs the killed worker held come back when their lock expires (BullMQ's stalled check, ~30 s).
    await waitFor('all 500 processed', async () => (await inboxCounts(s.db)).processed === 500, 150_000);
    await expectExactlyOnce(s.db, ids);
    expect(deliveriesOf(ids).every((d) => d.state === 'delivered')).toBe(true);
    for (const p of [worker2, intake]) expect(await terminate(p)).toEqual({ code: 0, signal: null });
    console.log(`sigkill: 500 payments in ${elapsed(t0)}`);
  }, 300_000);

  it('behavior: two worker processes, one intake and one scheduler on 1,000 payments: no duplicate entry', async () => {
    const t0 = performance.now();
    const s = await setup('two_workers');
    const [intake, scheduler, w1, w2] = await Promise.all([
      s.start('intake', 'intake', intakePort),
      s.start('scheduler', 'scheduler'),
      s.start('worker-1', 'worker'),
      s.start('worker-2', 'worker'),
    ]);
    const ids = await payIntents(1000);
    const paidIn = elapsed(t0);
    await waitFor('all 1,000 processed', async () => (await inboxCounts(s.db)).processed === 1000, 120_000);
    await expectExactlyOnce(s.db, ids);
    const done = await Promise.all(
      [w1, w2].map((w) =>
        w.metric('stablebooks_jobs_processed_total', { queue: 'webhooks', outcome: 'completed' }),
      ),
    );
    console.log(
      `two workers: 1,000 payments paid in ${paidIn}, all posted in ${elapsed(t0)}; jobs per worker ${done.join(' + ')}`,
    );
    // Both took a share (job ids make a second run of the same webhook impossible anyway).
    expect(done[0]).toBeGreaterThan(0);
    expect(done[1]).toBeGreaterThan(0);
    expect(done[0]! + done[1]!).toBeGreaterThanOrEqual(1000);
    for (const p of [w1, w2, scheduler, intake])
      expect(await terminate(p)).toEqual({ code: 0, signal: null });
  }, 300_000);

  it('behavior: Redis stopped during intake: webhooks get 200 and are stored, and are all processed once Redis is back', async () => {
    const t0 = performance.now();
    // A Redis of this case's own, so stopping it leaves the other test files' one alone.
    let redis: EphemeralRedis | undefined = await startEphemeralRedis();
    const redisPort = Number(new URL(redis.url).port);
    try {
      const s = await setup('redis_down', { redisUrl: redis.url });
      const procs = await Promise.all([
        s.start('intake', 'intake', intakePort),
        s.start('scheduler', 'scheduler'),
        s.start('worker', 'worker'),
      ]);
      const before = await payIntents(20);
      await waitFor('first 20 processed', async () => (await inboxCounts(s.db)).processed === 20, 30_000);

      await redis.stop();
      redis = undefined;
      const during = await payIntents(100);
      await waitFor(
        '100 webhooks delivered while Redis is down',
        async () => deliveriesOf(during).filter((d) => d.state === 'delivered').length === 100,
        30_000,
      );
      // Answered 200 at the first attempt: stored, not retried by the sender.
      for (const d of deliveriesOf(during)) expect(d.attempts.map((a) => a.status)).toEqual([200]);
      expect(await inboxCounts(s.db)).toEqual({ total: 120, received: 100, processed: 20 });
      await new Promise((r) => setTimeout(r, 2000));
      expect((await inboxCounts(s.db)).received).toBe(100);

      redis = await startEphemeralRedis({ port: redisPort });
      const back = performance.now();
      await waitFor(
        'all 120 processed after Redis returned',
        async () => (await inboxCounts(s.db)).processed === 120,
        90_000,
      );
      console.log(`redis down: 100 stored while down, all processed ${elapsed(back)} after Redis returned`);
      await expectExactlyOnce(s.db, [...before, ...during]);
      for (const p of procs) expect(await terminate(p)).toEqual({ code: 0, signal: null });
      console.log(`redis down: case took ${elapsed(t0)}`);
    } finally {
      await redis?.stop();
    }
  }, 240_000);

  it('behavior: SIGTERM drains: a worker stops taking jobs, finishes those in flight and exits 0', async () => {
    const TOTAL = 800;
    const s = await setup('sigterm');
    const intake = await s.start('intake', 'intake', intakePort);
    // Enough webhooks that a worker applying 64 at a time (~600 payments/s) is still busy when
    // SIGTERM arrives.
    const ids = await payIntents(TOTAL);
    await waitFor(`${TOTAL} stored`, async () => (await inboxCounts(s.db)).total === TOTAL, 60_000);
    const worker = await s.start('worker', 'worker');
    await waitFor('1 processed', async () => (await inboxCounts(s.db)).processed >= 1, 30_000);
    const t = performance.now();
    expect(await terminate(worker)).toEqual({ code: 0, signal: null });
    const drainedIn = elapsed(t);
    // Nothing was abandoned mid-job: no job is left active (a killed worker leaves its jobs
    // active until their lock expires), and what was processed is final.
    expect(await activeJobs(s.queuePrefix)).toBe(0);
    const atStop = await inboxCounts(s.db);
    console.log(`sigterm: worker exited 0 in ${drainedIn} with ${atStop.processed} of ${TOTAL} processed`);
    expect(atStop.processed).toBeLessThan(TOTAL);
    const again = await s.start('worker-again', 'worker');
    await waitFor(
      `all ${TOTAL} processed`,
      async () => (await inboxCounts(s.db)).processed === TOTAL,
      60_000,
    );
    await expectExactlyOnce(s.db, ids);
    for (const p of [again, intake]) expect(await terminate(p)).toEqual({ code: 0, signal: null });
  }, 180_000);
});
