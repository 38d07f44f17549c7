import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { QUEUE } from '../../jobs/queues.ts';
import type { Db } from '../../src/db/database.ts';
import { rawRpc } from '../../src/devservices/anvil.ts';
import { freePort } from '../../src/devservices/freePort.ts';
import { type EphemeralRedis, startEphemeralRedis } from '../../src/devservices/redis.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import {
  type DaemonChain,
  type DaemonProcess,
  type DaemonStore,
  daemonEnv,
  startDaemonProcess,
} from '../helpers/daemonProcess.ts';
import { startTestSandbox, testStore } from '../helpers/sandboxHarness.ts';
import { createMigratedDatabase } from '../helpers/testDatabase.ts';

/**
 * The payments pipeline as an operator runs it: `stablebooks start --role …` child processes
 * configured by their environment only, against the sandbox on anvil, PostgreSQL and Redis.
 * Every case has a database and a queue prefix of its own; the intake always listens on the port
 * the sandbox's store sends its webhooks to. Crashes (SIGKILL), two workers at once, Redis gone
 * during intake and SIGTERM's drain must all end with each payment posted exactly once.
 * KEEP_TEST_DB keeps the databases and the processes' logs for inspection.
 */
const CONCURRENCY = 16;
const intakePort = await freePort();
const store = testStore('st_a', {
  checkout_webhook_url: `http://127.0.0.1:${intakePort}/webhooks/checkout`,
  accepted_stable_coins: [1, 2],
});
const sandbox = await startTestSandbox({
  config: {
    rate_limit: { requests_per_second: 100_000, burst: 100_000 },
    businesses: [{ business_id: 'biz_1', stores: [store] }],
  },
});
const chain = [...sandbox.world.chains.values()][0]!;
const daemonStore: DaemonStore = {
  storeId: 'st_a',
  businessId: 'biz_1',
  apiKey: store.api_key as string,
  apiSecret: store.api_secret as string,
  wallets: {
    [chain.chainId]: {
      merchant: await chain.wallet('merchant:st_a'),
      custody: await chain.wallet('custody:biz_1'),
    },
  },
};
const daemonChain: DaemonChain = {
  chainId: chain.chainId,
  rpcUrl: chain.rpcUrl,
  tokens: { USDT: chain.tokens.USDT.address, USDC: chain.tokens.USDC.address },
  decimals: chain.decimals,
};
const client = sandbox.client('st_a', { retry: { maxAttempts: 3 } });
const workDir = mkdtempSync(join(tmpdir(), 'stablebooks-procs-'));
afterAll(() => {
  if (!process.env.KEEP_TEST_DB) rmSync(workDir, { recursive: true, force: true });
});

/** Every process a case started; each case stops its own, this catches those a failure left. */
const running = new Set<DaemonProcess>();
afterEach(async () => {
  await Promise.all([...running].map((p) => p.stop(5000)));
  running.clear();
});

interface Setup {
  label: string;
  db: Db;
  env: Record<string, string>;
  queuePrefix: string;
  start(label: string, roles: string, port?: number): Promise<DaemonProcess>;
}

async function headBlock(): Promise<number> {
  return Number.parseInt(await rawRpc<string>(chain.rpcUrl, 'eth_blockNumber', []), 16) + 1;
}

/** A fresh database and queue prefix, and a way to start daemon processes on them. */
async function setup(label: string, redisUrl = inject('redisUrl')): Promise<Setup> {
  const database = await createMigratedDatabase(`procs_${label}`, { max: 4 });
  const queuePrefix = `sbproc-${label}-${randomBytes(4).toString('hex')}`;
  const dir = join(workDir, label);
  const env = daemonEnv({
    dir,
    databaseUrl: database.url,
    redisUrl,
    svcBaseUrl: sandbox.url,
    stores: [daemonStore],
    // The cases share the sandbox's chain: each indexes only the blocks after its own start.
    chains: [{ ...daemonChain, startBlock: await headBlock() }],
    queuePrefix,
    // Sweeps every 0.6 s; a stored webhook without a job is re-enqueued after 4 s.
    pollIntervalScale: 0.02,
  });
  return {
    label,
    db: database.db,
    env,
    queuePrefix,
    async start(name, roles, port) {
      const proc = await startDaemonProcess({
        label: name,
        roles,
        env,
        port: port ?? (await freePort()),
        logDir: dir,
      });
      running.add(proc);
      return proc;
    },
  };
}

/** SIGTERM and the exit code, and the process is no longer ours to clean up. */
async function terminate(proc: DaemonProcess): Promise<{ code: number | null; signal: string | null }> {
  const result = await proc.kill('SIGTERM');
  running.delete(proc);
  return result;
}

/** Creates and pays `n` intents (as the merchant, then the buyer), CONCURRENCY at a time. */
async function payIntents(n: number, onPaid?: (paid: number) => void): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const i = next++;
        const created = await client.createCheckoutIntent({
          stable_coin: i % 2 === 0 ? 1 : 2,
          amount_cents: BigInt(1000 + i),
          order_id: `order-${i}`,
        });
        const id = created.allsvc_checkout_intent_id;
        const res = await sandbox.control(`/_sandbox/intents/${id}/pay`, {});
        if (res.status !== 200) throw new Error(`pay ${id}: ${res.status} ${JSON.stringify(res.body)}`);
        ids.push(id);
        onPaid?.(ids.length);
      }
    }),
  );
  return ids;
}

/** The sandbox's deliveries of these intents' webhooks. */
function deliveriesOf(ids: string[]) {
  const wanted = new Set(ids);
  return sandbox.world.webhooks
    .list()
    .filter((d) =>
      wanted.has((JSON.parse(d.body) as { all_svc_checkout_intent_id: string }).all_svc_checkout_intent_id),
    );
}

async function inboxCounts(db: Db): Promise<{ total: number; received: number; processed: number }> {
  const { rows } = await db.execute<{ total: number; received: number; processed: number }>(sql`
    select count(*)::int as total,
           (count(*) filter (where status = 'received'))::int as received,
           (count(*) filter (where status = 'processed'))::int as processed
    from webhook_inbox`);
  return rows[0]!;
}

async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | null | false>,
  ms: number,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The end state every case must reach: each webhook processed, each intent exactly one
 * checkout.confirmed entry (and at most one proof), no entry twice for any ref, and a zero trial
 * balance.
 */
async function expectExactlyOnce(db: Db, ids: string[]): Promise<void> {
  const inbox = await inboxCounts(db);
  expect(inbox).toEqual({ total: ids.length, received: 0, processed: ids.length });
  const { rows } = await db.execute<{ ref_id: string; kind: string; n: number }>(sql`
    select ref_id, kind, count(*)::int as n from ledger_entries group by ref_id, kind`);
  // Once anvil's finalized block (64 behind) passes a payment, its proof is a second entry kind.
  const confirmedOnce = new Set(
    rows.filter((r) => r.kind === 'checkout.confirmed' && r.n === 1).map((r) => r.ref_id),
  );
  const wrong = ids.filter((id) => !confirmedOnce.has(id));
  // A payment whose transfer was final before its (delayed) confirmation waited in suspense; once
  // confirmed, that suspense entry is reversed: as many reversals as suspense entries.
  const count = (kind: string) => rows.filter((r) => r.kind === kind).length;
  expect(count('chain.transfer_in_unmatched.reversal'), 'suspense entries moved to their intent').toBe(
    count('chain.transfer_in_unmatched'),
  );
  const expectedKinds = [
    'checkout.confirmed',
    'chain.payment_proven',
    'chain.transfer_in_unmatched',
    'chain.transfer_in_unmatched.reversal',
  ];
  expect(
    rows.filter((r) => !expectedKinds.includes(r.kind)),
    'entries of other kinds',
  ).toEqual([]);
  expect(wrong, 'intents without exactly one checkout.confirmed entry').toEqual([]);
  expect(
    rows.filter((r) => r.n !== 1),
    'refs with more than one entry of a kind',
  ).toEqual([]);
  expect(count('checkout.confirmed')).toBe(ids.length);
  for (const line of await trialBalance(db)) expect(line.net, `trial balance of ${line.asset}`).toBe(0n);
}

/** Jobs of the webhooks queue that a worker holds (or held, until their lock expires). */
async function activeJobs(queuePrefix: string, redisUrl = inject('redisUrl')): Promise<number> {
  const queue = new Queue(QUEUE.webhooks, { connection: { url: redisUrl }, prefix: queuePrefix });
  try {
    return await queue.getActiveCount();
  } finally {
    await queue.close();
  }
}

const elapsed = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

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
    const killed = await worker1.kill('SIGKILL');
    running.delete(worker1);
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
      const s = await setup('redis_down', redis.url);
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
