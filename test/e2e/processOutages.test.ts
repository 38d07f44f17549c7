import { Queue } from 'bullmq';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { alertJobs, claimLinkJobs, maintenanceJobs, QUEUE } from '../../jobs/queues.ts';
import { createDatabase } from '../../src/db/database.ts';
import { runMigrations } from '../../src/db/migrate.ts';
import { ensureLoginRole, urlAsRole } from '../../src/devservices/loginRole.ts';
import { startEphemeralPostgres } from '../../src/devservices/postgres.ts';
import type { DaemonProcess } from '../helpers/daemonProcess.ts';
import {
  elapsed,
  expectExactlyOnce,
  inboxCounts,
  startProcessCluster,
  waitFor,
} from '../helpers/processCluster.ts';

/**
 * Outages and crashes of the roles other than the worker (test/helpers/processCluster.ts: real
 * `stablebooks start --role …` processes, the sandbox on anvil sending signed webhooks and
 * retrying any answer other than 200 after 10 s, 30 s, 60 s, …):
 * - PostgreSQL stopped for 60 s while webhooks arrive and polls run;
 * - the intake killed (SIGKILL) while webhooks arrive, then started again;
 * - the scheduler killed (SIGKILL), then started again.
 * Each ends with every payment posted exactly once.
 */
const { intakePort, payIntents, deliveriesOf, setup, kill } = await startProcessCluster();
const terminate = (proc: DaemonProcess) => kill(proc, 'SIGTERM');

/** Still running: its exit has not resolved. */
async function alive(proc: DaemonProcess): Promise<boolean> {
  return Promise.race([
    proc.exited.then(() => false),
    new Promise<boolean>((r) => setTimeout(() => r(true), 50)),
  ]);
}

const allDelivered = (ids: string[]) => async () =>
  deliveriesOf(ids).length === ids.length && deliveriesOf(ids).every((d) => d.state === 'delivered');

describe('outages and crashes of real processes', () => {
  it('behavior: PostgreSQL stopped for 60 s while webhooks arrive: 503 with Retry-After, /readyz not ready, and afterwards every webhook booked once', async () => {
    const t0 = performance.now();
    // A PostgreSQL of this case's own, so stopping it leaves the other test files' one alone.
    const server = await startEphemeralPostgres();
    try {
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      await admin.query('create database outage');
      await admin.end();
      const ownerUrl = new URL(server.url);
      ownerUrl.pathname = '/outage';
      // The daemons run as the runtime role, as everywhere in the tests (helpers/testDatabase.ts).
      const role = inject('runtimeRole');
      await ensureLoginRole(server.url, role);
      await runMigrations(ownerUrl.toString(), { runtimeRole: role.name });
      const url = urlAsRole(ownerUrl.toString(), role);
      const database = createDatabase(url, { max: 4 });
      const s = await setup('pg_outage', { database: { db: database.db, url } });
      const intake = await s.start('intake', 'intake', intakePort);
      const rest = await s.start('worker-scheduler', 'worker,scheduler');

      const before = await payIntents(20);
      await waitFor(
        'first 20 processed',
        async () => (await inboxCounts(database.db)).processed === 20,
        60_000,
      );

      await server.pause();
      const down = performance.now();
      await waitFor(
        'the intake not ready while PostgreSQL is down',
        async () => (await fetch(`${intake.opsUrl}/readyz`)).status === 503,
        20_000,
      );
      const during = await payIntents(40);
      await waitFor(
        'webhooks refused with 503 while PostgreSQL is down',
        async () =>
          (await intake.metric('stablebooks_webhook_intake_errors_total', { reason: 'store_unavailable' })) >
          0,
        30_000,
      );
      const refused = deliveriesOf(during).flatMap((d) => d.attempts.filter((a) => a.status === 503));
      expect(refused.length).toBeGreaterThan(0);
      // Nothing was answered 200 (or 500) while nothing could be stored.
      expect(deliveriesOf(during).flatMap((d) => d.attempts.map((a) => a.status))).not.toContain(500);
      expect(deliveriesOf(during).filter((d) => d.state === 'delivered')).toEqual([]);
      const readyz = await fetch(`${rest.opsUrl}/readyz`);
      expect(readyz.status).toBe(503);
      expect(await readyz.json()).toMatchObject({ ok: false, checks: { postgres: false } });
      await new Promise((r) => setTimeout(r, Math.max(0, 60_000 - (performance.now() - down))));
      for (const p of [intake, rest]) expect(await alive(p), `${p.label} survived the outage`).toBe(true);

      await server.resume();
      const back = performance.now();
      console.log(`pg outage: down ${elapsed(down)}, ${refused.length} attempts answered 503`);
      await waitFor(
        '/readyz ready again',
        async () => (await fetch(`${intake.opsUrl}/readyz`)).status === 200,
        30_000,
      );
      // The sender's retries (10 s, 30 s, 60 s after each failure) bring every webhook in.
      await waitFor('every webhook delivered', allDelivered(during), 180_000);
      await waitFor(
        'all 60 processed',
        async () => (await inboxCounts(database.db)).processed === 60,
        60_000,
      );
      await expectExactlyOnce(database.db, [...before, ...during]);
      console.log(`pg outage: all booked ${elapsed(back)} after PostgreSQL returned; case ${elapsed(t0)}`);
      for (const p of [intake, rest]) expect(await terminate(p)).toEqual({ code: 0, signal: null });
      await database.close();
    } finally {
      await server.stop();
    }
  }, 420_000);

  it('behavior: the intake killed (SIGKILL) while webhooks arrive and started again: each payment posted once', async () => {
    const t0 = performance.now();
    const s = await setup('intake_sigkill');
    const rest = await s.start('worker-scheduler', 'worker,scheduler');
    const intake1 = await s.start('intake-1', 'intake', intakePort);
    let killed: Promise<unknown> | undefined;
    const ids = await payIntents(150, (paid) => {
      if (paid === 50) killed = kill(intake1, 'SIGKILL');
    });
    expect(await killed).toEqual({ code: null, signal: 'SIGKILL' });
    const failedAttempts = deliveriesOf(ids).filter((d) => d.attempts.some((a) => a.status !== 200));
    console.log(`intake sigkill: ${failedAttempts.length} webhooks had an attempt that failed`);
    expect(failedAttempts.length).toBeGreaterThan(0);
    const intake2 = await s.start('intake-2', 'intake', intakePort);
    await waitFor('every webhook delivered', allDelivered(ids), 180_000);
    await waitFor('all 150 processed', async () => (await inboxCounts(s.db)).processed === 150, 60_000);
    await expectExactlyOnce(s.db, ids);
    for (const p of [intake2, rest]) expect(await terminate(p)).toEqual({ code: 0, signal: null });
    console.log(`intake sigkill: case ${elapsed(t0)}`);
  }, 300_000);

  it('behavior: the scheduler killed (SIGKILL) and started again: each job scheduler exists once and the sweeps go on', async () => {
    const s = await setup('scheduler_sigkill');
    const [intake, worker] = await Promise.all([
      s.start('intake', 'intake', intakePort),
      s.start('worker', 'worker'),
    ]);
    const scheduler1 = await s.start('scheduler-1', 'scheduler');
    const first = await payIntents(30);
    expect(await kill(scheduler1, 'SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    // The schedules live in Redis: the sweeps go on without a scheduler process.
    const sweeps = () =>
      worker.metric('stablebooks_jobs_processed_total', { queue: 'maintenance', outcome: 'completed' });
    const atKill = await sweeps();
    await waitFor('a sweep after the kill', async () => (await sweeps()) > atKill, 30_000);
    const second = await payIntents(30);
    const scheduler2 = await s.start('scheduler-2', 'scheduler');
    await waitFor('all 60 processed', async () => (await inboxCounts(s.db)).processed === 60, 60_000);
    await expectExactlyOnce(s.db, [...first, ...second]);

    const expected: Record<string, number> = {
      [QUEUE.maintenance]: Object.keys(maintenanceJobs).length,
      // One chain, so one index pass, plus verifyPayments and prove.
      [QUEUE.chain]: 3,
      [QUEUE.claimLinks]: Object.keys(claimLinkJobs).length,
      [QUEUE.recon]: 1,
      [QUEUE.alerts]: Object.keys(alertJobs).length,
    };
    for (const [name, count] of Object.entries(expected)) {
      const queue = new Queue(name, { connection: { url: inject('redisUrl') }, prefix: s.queuePrefix });
      try {
        const schedulers = await queue.getJobSchedulers();
        expect(schedulers.length, `job schedulers of ${name}`).toBe(count);
        expect(new Set(schedulers.map((j) => j.key)).size).toBe(count);
      } finally {
        await queue.close();
      }
    }
    for (const p of [scheduler2, worker, intake])
      expect(await terminate(p)).toEqual({ code: 0, signal: null });
  }, 240_000);
});
