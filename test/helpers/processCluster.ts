import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, expect, inject } from 'vitest';
import { QUEUE } from '../../jobs/queues.ts';
import type { Db } from '../../src/db/database.ts';
import { rawRpc } from '../../src/devservices/anvil.ts';
import { freePort } from '../../src/devservices/freePort.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import {
  type DaemonChain,
  type DaemonProcess,
  type DaemonStore,
  daemonEnv,
  startDaemonProcess,
} from './daemonProcess.ts';
import { startTestSandbox, testStore } from './sandboxHarness.ts';
import { createMigratedDatabase } from './testDatabase.ts';

/**
 * The payments pipeline as an operator runs it: `stablebooks start --role …` child processes
 * configured by their environment only, against the sandbox on anvil, PostgreSQL and Redis. A test
 * file calls startProcessCluster() once at its top level; each case then calls setup() for a
 * database and a queue prefix of its own. The intake always listens on the port the sandbox's
 * store sends its webhooks to. KEEP_TEST_DB keeps the databases and the processes' logs.
 */
export async function startProcessCluster(options: { concurrency?: number } = {}) {
  const concurrency = options.concurrency ?? 16;
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
    // anvil mines a transaction's block at once: the indexer's passes keep their shortest interval.
    blockTimeMs: 1,
  };
  const client = sandbox.client('st_a', { retry: { maxAttempts: 3 } });
  const workDir = mkdtempSync(join(tmpdir(), 'stablebooks-procs-'));
  afterAll(() => {
    if (!process.env.KEEP_TEST_DB) rmSync(workDir, { recursive: true, force: true });
  });

  /** Every process a case started; each case stops its own, this catches those a failure left. */
  const running = new Set<DaemonProcess>();
  /** And every one it started, killed or not: a failed case prints how each ended and its log's tail. */
  const started: DaemonProcess[] = [];
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') for (const p of started) await printTail(p);
    started.length = 0;
    await Promise.all([...running].map((p) => p.stop(5000)));
    running.clear();
  });

  async function headBlock(): Promise<number> {
    return Number.parseInt(await rawRpc<string>(chain.rpcUrl, 'eth_blockNumber', []), 16) + 1;
  }

  /**
   * A fresh database (on the test PostgreSQL, or migrated at `databaseUrl`) and queue prefix, and a
   * way to start daemon processes on them.
   */
  async function setup(
    label: string,
    where: {
      redisUrl?: string;
      database?: { db: Db; url: string };
      eventsWebhook?: { url: string; secret: string };
    } = {},
  ): Promise<ClusterCase> {
    const database = where.database ?? (await createMigratedDatabase(`procs_${label}`, { max: 4 }));
    const queuePrefix = `sbproc-${label}-${randomBytes(4).toString('hex')}`;
    const dir = join(workDir, label);
    const env = daemonEnv({
      dir,
      databaseUrl: database.url,
      redisUrl: where.redisUrl ?? inject('redisUrl'),
      svcBaseUrl: sandbox.url,
      stores: [daemonStore],
      // The cases share the sandbox's chain: each indexes only the blocks after its own start.
      chains: [{ ...daemonChain, startBlock: await headBlock() }],
      queuePrefix,
      // Sweeps every 0.6 s; a stored webhook without a job is re-enqueued after 4 s.
      pollIntervalScale: 0.02,
      ...(where.eventsWebhook ? { eventsWebhook: where.eventsWebhook } : {}),
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
        started.push(proc);
        return proc;
      },
    };
  }

  /** Sends a signal and waits for the exit; the process is no longer ours to clean up. */
  async function kill(proc: DaemonProcess, signal: NodeJS.Signals = 'SIGTERM') {
    const result = await proc.kill(signal);
    running.delete(proc);
    return result;
  }

  /** Creates and pays `n` intents (as the merchant, then the buyer), `concurrency` at a time. */
  async function payIntents(n: number, onPaid?: (paid: number) => void): Promise<string[]> {
    const ids: string[] = [];
    let next = 0;
    const tag = randomBytes(3).toString('hex');
    // One failure stops every loop: intents paid after it would send their webhooks to the next
    // case's intake (the same port) and spoil its counts.
    let failed = false;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        try {
          while (next < n && !failed) {
            const i = next++;
            const created = await client.createCheckoutIntent({
              stable_coin: i % 2 === 0 ? 1 : 2,
              amount_cents: BigInt(1000 + i),
              order_id: `order-${tag}-${i}`,
            });
            const id = created.allsvc_checkout_intent_id;
            const res = await sandbox.control(`/_sandbox/intents/${id}/pay`, {});
            if (res.status !== 200) throw new Error(`pay ${id}: ${res.status} ${JSON.stringify(res.body)}`);
            ids.push(id);
            onPaid?.(ids.length);
          }
        } catch (err) {
          failed = true;
          throw err;
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

  /** Jobs of the webhooks queue that a worker holds (or held, until their lock expires). */
  async function activeJobs(queuePrefix: string, redisUrl = inject('redisUrl')): Promise<number> {
    const queue = new Queue(QUEUE.webhooks, { connection: { url: redisUrl }, prefix: queuePrefix });
    try {
      return await queue.getActiveCount();
    } finally {
      await queue.close();
    }
  }

  return { intakePort, sandbox, payIntents, deliveriesOf, activeJobs, setup, kill };
}

export interface ClusterCase {
  label: string;
  db: Db;
  env: Record<string, string>;
  queuePrefix: string;
  start(label: string, roles: string, port?: number): Promise<DaemonProcess>;
}

export async function inboxCounts(db: Db): Promise<{ total: number; received: number; processed: number }> {
  const { rows } = await db.execute<{ total: number; received: number; processed: number }>(sql`
    select count(*)::int as total,
           (count(*) filter (where status = 'received'))::int as received,
           (count(*) filter (where status = 'processed'))::int as processed
    from webhook_inbox`);
  return rows[0]!;
}

export async function waitFor<T>(
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
export async function expectExactlyOnce(db: Db, ids: string[]): Promise<void> {
  const inbox = await inboxCounts(db);
  expect(inbox).toEqual({ total: ids.length, received: 0, processed: ids.length });
  // A payment booked to suspense before its confirmation leaves it at the chain job's next pass
  // after the webhook is processed (a few seconds here): wait for that pass, at most a minute, then
  // judge (a suspense entry still not moved fails below, with its count).
  await waitFor('suspense entries moved to their intent', () => suspenseSettled(db), 60_000).catch(
    () => undefined,
  );
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

export const elapsed = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

async function suspenseSettled(db: Db): Promise<boolean> {
  const { rows } = await db.execute<{ pending: number }>(sql`
    select (count(*) filter (where kind = 'chain.transfer_in_unmatched')
          - count(*) filter (where kind = 'chain.transfer_in_unmatched.reversal'))::int as pending
    from ledger_entries`);
  return rows[0]?.pending === 0;
}

/** A process's exit (or "running") and the last lines of its log, for a failed case's output. */
async function printTail(proc: DaemonProcess, lines = 40): Promise<void> {
  const exit = await Promise.race([
    proc.exited.then((e) => `exited ${JSON.stringify(e)}`),
    new Promise<string>((r) => setTimeout(() => r('running'), 50)),
  ]);
  let tail = '(no log)';
  try {
    tail = readFileSync(proc.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {}
  console.error(
    `--- ${proc.label} (pid ${proc.pid}): ${exit}; last ${lines} lines of ${proc.logFile}\n${tail}`,
  );
}
