/**
 * Ledger benchmark: posting speed and balance latency, measured against PostgreSQL's own raw
 * speed (pgbench) on the same server in the same run. Run with `npm run bench:ledger`.
 *
 * 1. Baseline: pgbench TPS of a plain 3-row INSERT transaction, 1 and 8 clients; and, to tell the
 *    Node driver stack's cost from the ledger's, the same transaction sent from Node (pg + drizzle).
 * 2. Ledger entries/s (checkout-like entries of 3 or 4 postings, all writers on the same hot
 *    accounts) with 1 and 8 connections: one entry per transaction and 50 per transaction, each
 *    as postEntry is called today and with an AccountCache, and 50 in one postEntries statement;
 *    and where one entry's time goes.
 * 2b. Ours and the peer (bench/ledgerPeer.ts, issue 33): the same checkout-like entries posted by
 *    our poster and by a peer design (balances stored per account, rows locked in id order, as the
 *    best-known PostgreSQL ledgers do) on 10 and 50 hot accounts, at 1 and 8 connections.
 * 3. accountBalance latency for an account with ~1M postings: without a checkpoint, and after
 *    checkpointBalances with a small tail; plus how long checkpointBalances takes and the plan.
 * 4. The entries' hash chain (bench/ledgerSealing.ts): posting at 8 connections (one entry per
 *    tx + AccountCache) before migration 0017, with its index, and with the sealer running, in
 *    alternating rounds; then how fast the bulk-loaded entries are sealed and the chain recomputed.
 *
 * Starts a durable ephemeral PostgreSQL (fsync, synchronous_commit, full_page_writes on) and
 * always stops it; with DATABASE_URL set it uses that server instead and writes a run's worth of
 * (append-only, never deleted) bench entries into it, so point it at a scratch database only.
 *
 * Environment: BENCH_SECONDS (default 10) per timed phase, BENCH_POSTINGS (default 1000000)
 * postings on the measured account, BENCH_BALANCE_CALLS (default 200), BENCH_TAIL (default 1000
 * entries posted after the checkpoint), BENCH_SEAL_ROUNDS (default 3) rounds of the sealing
 * variants, BENCH_SEAL_EVERY_MS (default 5000, as the daemon's ledger.seal) between sealer runs,
 * BENCH_ONLY=peer (the baselines and 2b only).
 * No timing is asserted: the figures are printed.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type SQLWrapper, sql } from 'drizzle-orm';
import { createDatabase, type Db, type DbExecutor } from '../src/db/database.ts';
import { runMigrations } from '../src/db/migrate.ts';
import { findBinary, postgresBinDirs } from '../src/devservices/findBinary.ts';
import { type EphemeralPostgres, startEphemeralPostgres } from '../src/devservices/postgres.ts';
import { type AccountKind, account, accountCode, type Token } from '../src/ledger/accounts.ts';
import { accountBalance, checkpointBalances } from '../src/ledger/balances.ts';
import { type AccountCache, createAccountCache } from '../src/ledger/ensureAccounts.ts';
import type { EntryDraft, EntryLine } from '../src/ledger/entryDraft.ts';
import { postEntries, postEntry } from '../src/ledger/postEntry.ts';
import { fmt, log, positiveNumber, runCommand, sleep } from './benchKit.ts';
import { checkPeer, createPeer, type PeerAccounts, peerAccounts, postPeer } from './ledgerPeer.ts';
import { chainRates, type SealingRound, sealingImpact } from './ledgerSealing.ts';

const SECONDS = positiveNumber('BENCH_SECONDS', 10);
const TARGET_POSTINGS = positiveNumber('BENCH_POSTINGS', 1_000_000);
const BALANCE_CALLS = positiveNumber('BENCH_BALANCE_CALLS', 200);
const TAIL_ENTRIES = positiveNumber('BENCH_TAIL', 1000);
const SEAL_ROUNDS = positiveNumber('BENCH_SEAL_ROUNDS', 3);
const SEAL_EVERY_MS = positiveNumber('BENCH_SEAL_EVERY_MS', 5000);
const BATCH = 50;
/** BENCH_ONLY=peer: the baselines and the comparison with the peer only (phase 2b). */
const PEER_ONLY = process.env.BENCH_ONLY === 'peer';
/** Slices each design of the peer comparison runs in, alternating with the others. */
const PEER_SLICES = Math.round(positiveNumber('BENCH_PEER_SLICES', 5));
const BULK_CHUNK = 100_000;
/** Share of entries that go to the hottest store/token; the rest spread over the others. */
const HOT_SHARE = 0.7;

const USDC_BASE: Token = {
  chainId: 8453,
  address: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  symbol: 'USDC',
  decimals: 6,
};
const USDT_BNB: Token = {
  chainId: 56,
  address: '0x55d398326f99059ff775485246999027b3197955',
  symbol: 'USDT',
  decimals: 18,
};

// ---------------------------------------------------------------------------------------------
// Server-side and machine counters, to explain the figures (group commit, CPU saturation).

interface ServerCounters {
  commits: number;
  walSyncs: number;
  walBytes: number;
}

interface CpuCounters {
  machine: { busy: number; total: number } | null;
  nodeUs: number;
  at: number;
}

function machineCpu(): { busy: number; total: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

function cpuCounters(): CpuCounters {
  const usage = process.cpuUsage();
  return { machine: machineCpu(), nodeUs: usage.user + usage.system, at: performance.now() };
}

async function serverCounters(db: Db): Promise<ServerCounters> {
  const { rows } = await db.execute<{ commits: string; wal_sync: string; wal_bytes: string }>(sql`
    select (select xact_commit from pg_stat_database where datname = current_database())::text as commits,
           wal_sync::text, wal_bytes::text
    from pg_stat_wal`);
  const r = rows[0];
  return {
    commits: Number(r?.commits ?? 0),
    walSyncs: Number(r?.wal_sync ?? 0),
    walBytes: Number(r?.wal_bytes ?? 0),
  };
}

/**
 * What the posting connections were doing, sampled from pg_stat_activity every 20 ms: share of
 * samples running (on CPU, no wait event), waiting on a row or other heavyweight lock (Lock),
 * on a lightweight lock (LWLock, e.g. WAL insertion), on IO (the WAL flush at commit), and idle
 * with the client (Client: the round trip and Node's own work, in or out of a transaction).
 */
type WaitShares = Record<'cpu' | 'lock' | 'lwlock' | 'io' | 'client' | 'other', number>;

function sampleWaits(statsDb: Db, applicationName = 'stablebooks-bench'): { stop(): Promise<WaitShares> } {
  const counts: WaitShares = { cpu: 0, lock: 0, lwlock: 0, io: 0, client: 0, other: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await statsDb.execute<{ state: string | null; type: string | null }>(sql`
        select state, wait_event_type as type from pg_stat_activity
        where application_name = ${applicationName} and backend_type = 'client backend'`);
      for (const r of rows) {
        if (r.state !== 'active' || r.type === 'Client') counts.client++;
        else if (r.type === null) counts.cpu++;
        else if (r.type === 'Lock') counts.lock++;
        else if (r.type === 'LWLock') counts.lwlock++;
        else if (r.type === 'IO') counts.io++;
        else counts.other++;
      }
      await sleep(20);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      const total = Math.max(
        1,
        Object.values(counts).reduce((a, b) => a + b, 0),
      );
      for (const k of Object.keys(counts) as (keyof WaitShares)[]) counts[k] /= total;
      return counts;
    },
  };
}

function formatWaits(w: WaitShares | null): string {
  if (!w) return '';
  const pct = (v: number) => `${Math.round(v * 100)}`;
  return `${pct(w.cpu)}/${pct(w.lock)}/${pct(w.lwlock)}/${pct(w.io)}/${pct(w.client)}`;
}

interface PhaseStats {
  /** Commits per WAL fsync: above 1 means group commit shares flushes between transactions. */
  commitsPerFlush: number;
  walBytesPerCommit: number;
  /** WAL bytes written in the phase, all told. */
  walBytes: number;
  /** Busy cores of the whole machine (all processes), e.g. 1.9 of 2. */
  machineCores: number | null;
  /** This Node process's CPU, in cores. */
  nodeCores: number;
}

/**
 * Runs `work` between two readings of the server's counters and of CPU time. Backends flush
 * their statistics when they exit or go idle, hence the pause before the second server reading.
 */
async function measured<T>(statsDb: Db, work: () => Promise<T>): Promise<{ result: T; stats: PhaseStats }> {
  const server0 = await serverCounters(statsDb);
  const cpu0 = cpuCounters();
  const result = await work();
  const cpu1 = cpuCounters();
  await sleep(1500);
  const server1 = await serverCounters(statsDb);
  const commits = Math.max(1, server1.commits - server0.commits);
  let machineCores: number | null = null;
  if (cpu0.machine && cpu1.machine) {
    const total = cpu1.machine.total - cpu0.machine.total;
    if (total > 0) machineCores = ((cpu1.machine.busy - cpu0.machine.busy) / total) * os.cpus().length;
  }
  const stats = {
    commitsPerFlush: commits / Math.max(1, server1.walSyncs - server0.walSyncs),
    walBytesPerCommit: (server1.walBytes - server0.walBytes) / commits,
    walBytes: server1.walBytes - server0.walBytes,
    machineCores,
    nodeCores: (cpu1.nodeUs - cpu0.nodeUs) / 1000 / (cpu1.at - cpu0.at),
  };
  return { result, stats };
}

// ---------------------------------------------------------------------------------------------
// 1. pgbench baseline.

interface BaselineResult {
  clients: number;
  tps: number;
  latencyMs: number | null;
  stats: PhaseStats;
}

async function pgbench(
  url: string,
  statsDb: Db,
  scriptFile: string,
  clients: number,
  threads: number,
): Promise<BaselineResult> {
  const bin = findBinary({
    name: 'pgbench',
    debianPackage: 'postgresql',
    brewFormula: 'postgresql@15',
    extraDirs: postgresBinDirs(),
  });
  const args = ['-n', '-f', scriptFile, '-c', String(clients), '-j', String(threads)];
  args.push('-T', String(Math.max(1, Math.round(SECONDS))), '-P', '2', url);
  log(`pgbench ${clients} client(s): ${args.slice(0, -1).join(' ')} <url>`);
  const { result: output, stats } = await measured(statsDb, () =>
    runCommand(bin, args, {
      onLine: (line) => {
        if (line.startsWith('progress:')) log(`  pgbench ${line}`);
      },
    }),
  );
  const tps = /tps = ([\d.]+) \((?:without|excluding)/.exec(output) ?? /tps = ([\d.]+)/.exec(output);
  if (!tps?.[1]) throw new Error(`pgbench printed no tps:\n${output.slice(-2000)}`);
  const latency = /latency average = ([\d.]+) ms/.exec(output);
  const result = {
    clients,
    tps: Number(tps[1]),
    latencyMs: latency?.[1] ? Number(latency[1]) : null,
    stats,
  };
  log(`pgbench ${clients} client(s): ${fmt(result.tps)} TPS`);
  return result;
}

// ---------------------------------------------------------------------------------------------
// 2. Ledger posting.

interface Combo {
  storeId: string;
  token: Token;
}

type Shape = 'exact' | 'short' | 'over';

/** The five accounts of a combo that checkout entries post to. */
const CHECKOUT_KINDS: AccountKind[] = [
  'assets:in_transit',
  'expense:service_fees',
  'income:sales',
  'expense:sales_shortfall',
  'liability:customer_overpayments',
];

/**
 * Checkout-like entries (rule 1 of docs/accounting.md): in_transit N, service_fees F, sales -R,
 * +/- diff. `hotShare` of them go to the first combo, the rest spread over the others (1 /
 * combos.length: uniform). With `twoLines`, each entry is instead one amount between two of the
 * five accounts of its combo, drawn at random (a single transfer).
 */
function entryFactory(
  run: string,
  combos: Combo[],
  options_: { hotShare?: number; twoLines?: boolean } = {},
) {
  let seq = 0;
  const hotShare = options_.hotShare ?? HOT_SHARE;
  return (options: { combo?: Combo; shape?: Shape } = {}): EntryDraft => {
    seq++;
    const others = combos.slice(1);
    const combo =
      options.combo ??
      (Math.random() < hotShare || others.length === 0
        ? combos[0]!
        : others[Math.floor(Math.random() * others.length)]!);
    if (options_.twoLines) return transferEntry(run, seq, combo);
    const roll = Math.random();
    const shape: Shape = options.shape ?? (roll < 0.1 ? 'short' : roll < 0.2 ? 'over' : 'exact');
    const unit = 10n ** BigInt(combo.token.decimals);
    const R = (BigInt(100 + Math.floor(Math.random() * 100_000)) * unit) / 100n;
    const P = shape === 'short' ? R - R / 10n : shape === 'over' ? R + R / 20n : R;
    const F = P / 100n;
    const N = P - F;
    const acct = (kind: AccountKind) => account(kind, combo.storeId, combo.token);
    const lines: EntryLine[] = [
      { account: acct('assets:in_transit'), amount: N },
      { account: acct('expense:service_fees'), amount: F },
      { account: acct('income:sales'), amount: -R },
    ];
    if (P < R) lines.push({ account: acct('expense:sales_shortfall'), amount: R - P });
    if (P > R) lines.push({ account: acct('liability:customer_overpayments'), amount: -(P - R) });
    const intent = `pi_${run}_${seq}`;
    return {
      idempotencyKey: `bench:${run}:checkout:${seq}`,
      kind: 'checkout.confirmed',
      occurredAt: new Date(),
      storeId: combo.storeId,
      ref: { type: 'checkout_intent', id: intent },
      lines,
      metadata: {
        amount_coins: R.toString(),
        actual_paid_amount: P.toString(),
        service_fee_amount: F.toString(),
        net_income_amount: N.toString(),
        fiat_amount_cents: null,
        tx_hash: `0x${seq.toString(16).padStart(64, '0')}`,
      },
    };
  };
}

/** A two-line entry: one amount from one account of the combo's five to another. */
function transferEntry(run: string, seq: number, combo: Combo): EntryDraft {
  const i = Math.floor(Math.random() * CHECKOUT_KINDS.length);
  const j = (i + 1 + Math.floor(Math.random() * (CHECKOUT_KINDS.length - 1))) % CHECKOUT_KINDS.length;
  const amount =
    (BigInt(100 + Math.floor(Math.random() * 100_000)) * 10n ** BigInt(combo.token.decimals)) / 100n;
  return {
    idempotencyKey: `bench:${run}:transfer:${seq}`,
    kind: 'bench.transfer',
    occurredAt: new Date(),
    storeId: combo.storeId,
    ref: { type: 'bench_transfer', id: `${run}_${seq}` },
    lines: [
      { account: account(CHECKOUT_KINDS[j]!, combo.storeId, combo.token), amount },
      { account: account(CHECKOUT_KINDS[i]!, combo.storeId, combo.token), amount: -amount },
    ],
    metadata: { amount: amount.toString(), tx_hash: `0x${seq.toString(16).padStart(64, '0')}` },
  };
}

type NextEntry = ReturnType<typeof entryFactory>;

interface LedgerResult {
  label: string;
  connections: number;
  batch: number;
  cached: boolean;
  entries: number;
  postings: number;
  transactions: number;
  seconds: number;
  entriesPerSecond: number;
  postingsPerSecond: number;
  stats: PhaseStats;
  waits: WaitShares | null;
}

async function postOnce(
  db: Db,
  next: NextEntry,
  batch: number,
  cache: AccountCache | undefined,
  options: { postEntries?: boolean } = {},
) {
  if (batch === 0) {
    // One entry as one statement (its own implicit transaction): how the poster runs one entry
    // when no fact is written beside it. The deferred balance check still runs at that commit.
    const draft = next();
    await postEntry(db, draft, cache ? { accounts: cache } : {});
    return draft.lines.length;
  }
  const drafts = Array.from({ length: batch }, () => next());
  await db.transaction(async (tx) => {
    // The batch as one statement (postEntries), or one postEntry per entry as the daemon's
    // batched webhook processing posts today.
    if (options.postEntries) await postEntries(tx, drafts, cache ? { accounts: cache } : {});
    else for (const draft of drafts) await postEntry(tx, draft, cache ? { accounts: cache } : {});
  });
  return drafts.reduce((n, d) => n + d.lines.length, 0);
}

/**
 * Runs `step` in a loop on each of `connections` connections for SECONDS, printing progress;
 * each step is one transaction and says how many entries and postings it wrote.
 */
async function timedLoop(
  url: string,
  statsDb: Db,
  connections: number,
  step: (db: Db, worker: number) => Promise<{ entries: number; postings: number }>,
  options: { waits?: boolean } = {},
): Promise<{
  entries: number;
  postings: number;
  transactions: number;
  seconds: number;
  stats: PhaseStats;
  waits: WaitShares | null;
}> {
  const database = createDatabase(url, { max: connections, applicationName: 'stablebooks-bench' });
  let entries = 0;
  let postings = 0;
  let transactions = 0;
  let waits: WaitShares | null = null;
  try {
    // Open every connection (and warm any cache) before the clock starts.
    await Promise.all(Array.from({ length: connections }, (_, w) => step(database.db, w)));
    const sampler = options.waits ? sampleWaits(statsDb) : null;
    const { result: seconds, stats } = await measured(statsDb, async () => {
      const t0 = performance.now();
      const deadline = t0 + SECONDS * 1000;
      let lastTransactions = 0;
      let lastAt = t0;
      const progress = setInterval(() => {
        const now = performance.now();
        const rate = ((transactions - lastTransactions) * 1000) / (now - lastAt);
        log(
          `  ${((now - t0) / 1000).toFixed(0)} s: ${fmt(transactions)} transactions, ${fmt(entries)} entries, ` +
            `${fmt(rate)} transactions/s`,
        );
        lastTransactions = transactions;
        lastAt = now;
      }, 2000);
      try {
        await Promise.all(
          Array.from({ length: connections }, async (_, w) => {
            while (performance.now() < deadline) {
              // Add after the await: `postings += await ...` would read postings before it and lose updates.
              const done = await step(database.db, w);
              entries += done.entries;
              postings += done.postings;
              transactions++;
            }
          }),
        );
      } finally {
        clearInterval(progress);
        if (sampler) waits = await sampler.stop();
      }
      return (performance.now() - t0) / 1000;
    });
    return { entries, postings, transactions, seconds, stats, waits };
  } finally {
    await database.close();
  }
}

async function runLedger(
  url: string,
  statsDb: Db,
  next: NextEntry,
  options: { connections: number; batch: number; cached: boolean; postEntries?: boolean },
): Promise<LedgerResult> {
  const { connections, batch, cached } = options;
  const label = `${batch === 0 ? 'one entry, one statement' : batch === 1 ? 'one entry per tx' : `${batch} entries per tx${options.postEntries ? ' in one statement (postEntries)' : ''}`}${cached ? ' + AccountCache' : ''}`;
  log(`ledger ${connections} connection(s), ${label}: ${SECONDS} s`);
  const cache = cached ? createAccountCache() : undefined;
  const run = await timedLoop(url, statsDb, connections, async (db) => ({
    entries: Math.max(batch, 1),
    postings: await postOnce(db, next, batch, cache, { postEntries: options.postEntries ?? false }),
  }));
  const result: LedgerResult = {
    label,
    connections,
    batch,
    cached,
    ...run,
    entriesPerSecond: run.entries / run.seconds,
    postingsPerSecond: run.postings / run.seconds,
  };
  log(
    `ledger ${connections} connection(s), ${label}: ${fmt(result.entriesPerSecond)} entries/s, ` +
      `${fmt(result.postingsPerSecond)} postings/s (${(run.postings / run.entries).toFixed(2)} postings/entry)`,
  );
  return result;
}

// ---------------------------------------------------------------------------------------------
// 2b. Ours and the peer (bench/ledgerPeer.ts) on the same hot accounts, side by side.

interface PeerRow {
  hot: number;
  connections: number;
  /** ours: postEntry per entry (the daemon's path); ours-1stmt: postEntries, the batch in one statement. */
  design: 'ours' | 'ours-1stmt' | 'peer';
  batch: number;
  twoLines: boolean;
  entriesPerSecond: number;
  postingsPerSecond: number;
  transactionsPerSecond: number;
  walBytesPerEntry: number;
  nodeCores: number;
  machineCores: number | null;
  waits: WaitShares | null;
  /** entries/s of each slice, in order. */
  slices: number[];
}

interface SliceTotals {
  entries: number;
  postings: number;
  transactions: number;
  seconds: number;
  walBytes: number;
  nodeCores: number;
  machineCores: number | null;
  waits: WaitShares | null;
  slices: number[];
}

/**
 * Runs each design for SECONDS in all, on `connections` connections of its own pool, in
 * PEER_SLICES slices: slice k runs every design once, one after the other, the first design of
 * the slice rotating. This shared machine's speed swings by 2-3x within a minute (other jobs'
 * CPU and IO); alternating short slices exposes the designs to the same swings, which one 10 s
 * run each does not. WAL is read from the WAL position (exact at once), CPU from /proc/stat and
 * this process, waits by sampling while the design runs.
 */
async function interleaved(
  url: string,
  statsDb: Db,
  connections: number,
  steps: ((db: Db) => Promise<{ entries: number; postings: number }>)[],
): Promise<SliceTotals[]> {
  // A name per design's pool, so that the wait sampling sees only the design that runs.
  const names = steps.map((_, n) => `stablebooks-bench-design-${n}`);
  const pools = names.map((applicationName) => createDatabase(url, { max: connections, applicationName }));
  const totals = steps.map(() => ({
    entries: 0,
    postings: 0,
    transactions: 0,
    seconds: 0,
    walBytes: 0,
    nodeUs: 0,
    machineBusy: 0,
    machineTotal: 0,
    waits: [] as WaitShares[],
    slices: [] as number[],
  }));
  const lsn = async () =>
    Number(
      (await statsDb.execute<{ b: string }>(sql`select (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as b`))
        .rows[0]?.b ?? 0,
    );
  try {
    // Open every connection (and warm any cache) before the clock starts.
    for (const [i, step] of steps.entries())
      await Promise.all(Array.from({ length: connections }, () => step(pools[i]!.db)));
    const sliceMs = (SECONDS * 1000) / PEER_SLICES;
    for (let slice = 0; slice < PEER_SLICES; slice++) {
      for (let k = 0; k < steps.length; k++) {
        const i = (k + slice) % steps.length;
        const step = steps[i]!;
        const db = pools[i]!.db;
        const t = totals[i]!;
        const sampler = sampleWaits(statsDb, names[i]);
        const wal0 = await lsn();
        const cpu0 = cpuCounters();
        const t0 = performance.now();
        const deadline = t0 + sliceMs;
        let entries = 0;
        await Promise.all(
          Array.from({ length: connections }, async () => {
            while (performance.now() < deadline) {
              const done = await step(db);
              entries += done.entries;
              t.postings += done.postings;
              t.transactions++;
            }
          }),
        );
        const seconds = (performance.now() - t0) / 1000;
        const cpu1 = cpuCounters();
        t.walBytes += (await lsn()) - wal0;
        t.waits.push(await sampler.stop());
        t.entries += entries;
        t.seconds += seconds;
        t.slices.push(entries / seconds);
        t.nodeUs += cpu1.nodeUs - cpu0.nodeUs;
        if (cpu0.machine && cpu1.machine) {
          t.machineBusy += cpu1.machine.busy - cpu0.machine.busy;
          t.machineTotal += cpu1.machine.total - cpu0.machine.total;
        }
      }
    }
  } finally {
    for (const pool of pools) await pool.close();
  }
  return totals.map((t) => {
    const waits = t.waits.reduce(
      (sum, w) => {
        for (const k of Object.keys(sum) as (keyof WaitShares)[]) sum[k] += w[k] / t.waits.length;
        return sum;
      },
      { cpu: 0, lock: 0, lwlock: 0, io: 0, client: 0, other: 0 } as WaitShares,
    );
    return {
      entries: t.entries,
      postings: t.postings,
      transactions: t.transactions,
      seconds: t.seconds,
      walBytes: t.walBytes,
      nodeCores: t.nodeUs / 1000 / (t.seconds * 1000),
      machineCores: t.machineTotal > 0 ? (t.machineBusy / t.machineTotal) * os.cpus().length : null,
      waits,
      slices: t.slices,
    };
  });
}

/**
 * Posts the same kind of entries through our poster (postEntry with an AccountCache, as the
 * daemon posts; and postEntries for a batch) and through the peer, on `hot` accounts: hot / 5
 * combos of (store, token) with the five accounts of a checkout entry each, every entry on a combo
 * drawn uniformly. One entry per transaction and BATCH per transaction, at each connection count,
 * the designs in alternating slices (interleaved).
 */
async function peerComparison(
  url: string,
  statsDb: Db,
  run: string,
  hot: number,
  options: { twoLines?: boolean; connections: readonly number[]; batches: readonly number[] },
): Promise<PeerRow[]> {
  const twoLines = options.twoLines ?? false;
  const tag = `${run}-h${hot}${twoLines ? 't' : ''}`;
  const combos: Combo[] = Array.from(
    { length: Math.max(1, Math.round(hot / CHECKOUT_KINDS.length)) },
    (_, i) => ({
      storeId: `peer-${tag}-${i}`,
      token: USDC_BASE,
    }),
  );
  const next = entryFactory(tag, combos, { hotShare: 1 / combos.length, twoLines });
  // Every account of both designs exists before anything is timed: one entry of each shape per
  // combo (together they use all five accounts), posted through both.
  const setup = createDatabase(url, { max: 1 });
  let ids: PeerAccounts;
  try {
    const shapes = entryFactory(`${tag}-setup`, combos);
    const drafts = combos.flatMap((combo) =>
      (['exact', 'short', 'over'] as const).map((shape) => shapes({ combo, shape })),
    );
    for (const draft of drafts) await postEntry(setup.db, draft);
    ids = await peerAccounts(setup.db, drafts);
    await setup.db.transaction((tx) => postPeer(tx, drafts, ids).then(() => undefined));
  } finally {
    await setup.close();
  }
  const rows: PeerRow[] = [];
  for (const connections of options.connections)
    for (const batch of options.batches) {
      const designs = batch === 1 ? (['ours', 'peer'] as const) : (['ours', 'ours-1stmt', 'peer'] as const);
      const what = `${hot} hot accounts, ${twoLines ? '2-line entries, ' : ''}${batch === 1 ? 'one entry per tx' : `${batch} entries per tx`}, ${connections} connection(s)`;
      log(`${designs.join(' / ')}, ${what}: ${SECONDS} s each, in ${PEER_SLICES} alternating slices`);
      const cache = createAccountCache();
      const results = await interleaved(
        url,
        statsDb,
        connections,
        designs.map((design) => async (db: Db) => {
          if (design !== 'peer') {
            const postings = await postOnce(db, next, batch, cache, { postEntries: design === 'ours-1stmt' });
            return { entries: batch, postings };
          }
          const drafts = Array.from({ length: batch }, () => next());
          const postings = await db.transaction((tx) => postPeer(tx, drafts, ids));
          return { entries: batch, postings };
        }),
      );
      for (const [i, design] of designs.entries()) {
        const r = results[i]!;
        const row: PeerRow = {
          hot,
          connections,
          design,
          batch,
          twoLines,
          entriesPerSecond: r.entries / r.seconds,
          postingsPerSecond: r.postings / r.seconds,
          transactionsPerSecond: r.transactions / r.seconds,
          walBytesPerEntry: r.walBytes / Math.max(1, r.entries),
          nodeCores: r.nodeCores,
          machineCores: r.machineCores,
          waits: r.waits,
          slices: r.slices,
        };
        log(
          `${design}, ${what}: ${fmt(row.entriesPerSecond)} entries/s, ${fmt(row.postingsPerSecond)} postings/s ` +
            `(slices: ${r.slices.map((x) => fmt(x)).join(' ')}); waits cpu/lock/lwlock/io/client % ${formatWaits(row.waits)}`,
        );
        rows.push(row);
      }
    }
  await checkPeer(statsDb);
  return rows;
}

function printPeer(rows: PeerRow[], baselineFor: (clients: number) => number): void {
  const peerOf = (r: PeerRow) =>
    rows.find(
      (p) =>
        p.design === 'peer' &&
        p.hot === r.hot &&
        p.connections === r.connections &&
        p.batch === r.batch &&
        p.twoLines === r.twoLines,
    );
  const peerOnePerTx = (r: PeerRow) =>
    rows.find(
      (p) =>
        p.design === 'peer' &&
        p.hot === r.hot &&
        p.connections === r.connections &&
        p.batch === 1 &&
        p.twoLines === r.twoLines,
    );
  console.log(
    `\n## Ours and the peer (bench/ledgerPeer.ts), ${SECONDS} s per row in ${PEER_SLICES} slices alternating with the other designs, durable commits\n\n` +
      'waits: share of samples of the posting backends on CPU / Lock / LWLock / IO / with the client, %\n',
  );
  console.log(
    table(
      [
        'design',
        'hot accounts',
        'entries',
        'per tx',
        'conns',
        'entries/s',
        'postings/s',
        'ratio to pgbench TPS',
        'ours / peer',
        'WAL B/entry',
        'node CPU',
        `machine CPU (of ${os.cpus().length})`,
        'waits',
        'entries/s per slice, min-max',
      ],
      rows.map((r) => {
        const peer = peerOf(r);
        return [
          r.design,
          String(r.hot),
          r.twoLines ? '2-line' : 'checkout',
          String(r.batch),
          String(r.connections),
          fmt(r.entriesPerSecond),
          fmt(r.postingsPerSecond),
          (r.entriesPerSecond / baselineFor(r.connections)).toFixed(2),
          r.design !== 'peer' && peer ? (r.entriesPerSecond / peer.entriesPerSecond).toFixed(2) : '',
          fmt(r.walBytesPerEntry),
          r.nodeCores.toFixed(2),
          r.machineCores === null ? '?' : r.machineCores.toFixed(1),
          formatWaits(r.waits),
          `${fmt(Math.min(...r.slices))}-${fmt(Math.max(...r.slices))}`,
        ];
      }),
    ),
  );
  console.log('\n## Targets against the peer (issue 33, 10 hot accounts, checkout entries)\n');
  for (const r of rows.filter((x) => x.design !== 'peer' && x.hot === 10 && !x.twoLines)) {
    const peer = peerOf(r);
    const single = peerOnePerTx(r);
    if (!peer || !single) continue;
    const want = r.batch === 1 ? 1 : 2;
    const ratio = r.entriesPerSecond / peer.entriesPerSecond;
    console.log(
      `- ${r.design === 'ours' ? 'ours' : 'ours in one statement (postEntries)'} ${r.batch === 1 ? 'one entry per tx' : `${r.batch} per tx`}, ${r.connections} conn: ` +
        `${ratio.toFixed(2)}x the peer's ${r.batch === 1 ? 'one per tx' : `${r.batch} per tx`} (target >= ${want}x): ` +
        `${ratio >= want ? 'met' : 'NOT met'}` +
        (r.batch === 1
          ? ''
          : `; ${(r.entriesPerSecond / single.entriesPerSecond).toFixed(2)}x the peer's one per tx`),
    );
  }
}

/** pgbench's 3-row transaction sent from Node through the same driver stack as the ledger. */
async function runNodeBaseline(
  url: string,
  statsDb: Db,
  table: string,
  connections: number,
): Promise<BaselineResult> {
  log(`node (pg + drizzle) 3-row INSERT tx, ${connections} connection(s): ${SECONDS} s`);
  const run = await timedLoop(url, statsDb, connections, async (db, worker) => {
    await db.transaction(async (tx) => {
      for (const n of [1, 2, 3])
        await tx.execute(
          sql`insert into ${sql.identifier(table)} (client, n, payload) values (${worker}, ${n}, ${`row ${n}`})`,
        );
    });
    return { entries: 0, postings: 0 };
  });
  const tps = run.transactions / run.seconds;
  log(`node 3-row INSERT tx, ${connections} connection(s): ${fmt(tps)} TPS`);
  return { clients: connections, tps, latencyMs: null, stats: run.stats };
}

interface Anatomy {
  entries: number;
  /** Mean milliseconds per entry, client-side, of each step of db.transaction(tx => postEntry(tx, d)). */
  roundTrip: number;
  begin: number;
  ensureAccounts: number;
  insert: number;
  balanceCheck: number;
  commit: number;
  total: number;
}

/**
 * Where one entry's time goes with 1 connection, without an AccountCache: each statement timed
 * from the client, and the deferred balance trigger fired early by SET CONSTRAINTS ALL IMMEDIATE
 * (one extra round trip) so that COMMIT is left with little more than the WAL flush.
 */
async function anatomy(url: string, next: NextEntry, entries: number): Promise<Anatomy> {
  const database = createDatabase(url, { max: 1, applicationName: 'stablebooks-bench-anatomy' });
  const sum = { roundTrip: 0, begin: 0, ensureAccounts: 0, insert: 0, balanceCheck: 0, commit: 0, total: 0 };
  try {
    await postOnce(database.db, next, 1, undefined);
    for (let i = 0; i < entries; i++) {
      const draft = next();
      let t = performance.now();
      await database.db.execute(sql`select 1`);
      sum.roundTrip += performance.now() - t;
      const calls: number[] = [];
      let entered = 0;
      let checked = 0;
      const t0 = performance.now();
      await database.db.transaction(async (tx) => {
        entered = performance.now();
        const timedCall = async <T>(run: () => Promise<T>): Promise<T> => {
          const s = performance.now();
          try {
            return await run();
          } finally {
            calls.push(performance.now() - s);
          }
        };
        // Every statement postEntry sends, plain (execute) or named and prepared (executePrepared
        // goes through the session's prepareQuery), is timed.
        const session = tx._.session;
        const timed = {
          execute: (query: SQLWrapper) => timedCall(() => tx.execute(query)),
          _: {
            session: {
              prepareQuery(...args: Parameters<typeof session.prepareQuery>) {
                const prepared = session.prepareQuery(...args);
                return { execute: () => timedCall(() => prepared.execute()) };
              },
            },
          },
        } as unknown as DbExecutor;
        await postEntry(timed, draft);
        t = performance.now();
        await tx.execute(sql`set constraints all immediate`);
        checked = performance.now();
        sum.balanceCheck += checked - t;
      });
      const t1 = performance.now();
      sum.begin += entered - t0;
      sum.ensureAccounts += calls[0] ?? 0;
      sum.insert += calls[1] ?? 0;
      sum.commit += t1 - checked;
      sum.total += t1 - t0;
    }
  } finally {
    await database.close();
  }
  const mean = (v: number) => v / entries;
  const result: Anatomy = {
    entries,
    roundTrip: mean(sum.roundTrip),
    begin: mean(sum.begin),
    ensureAccounts: mean(sum.ensureAccounts),
    insert: mean(sum.insert),
    balanceCheck: mean(sum.balanceCheck),
    commit: mean(sum.commit),
    total: mean(sum.total),
  };
  log(
    `anatomy of one entry (${entries} entries, mean ms): begin ${result.begin.toFixed(3)}, ensureAccounts ` +
      `${result.ensureAccounts.toFixed(3)}, insert ${result.insert.toFixed(3)}, balance check ` +
      `${result.balanceCheck.toFixed(3)}, commit ${result.commit.toFixed(3)}, total ${result.total.toFixed(3)} ` +
      `(select 1: ${result.roundTrip.toFixed(3)})`,
  );
  return result;
}

// ---------------------------------------------------------------------------------------------
// 3. Balance of one account at ~1M postings.

interface LatencyResult {
  label: string;
  calls: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

async function balanceLatency(
  db: Db,
  accountId: bigint,
  label: string,
  calls: number,
  expected: bigint,
): Promise<LatencyResult> {
  for (let i = 0; i < 5; i++) await accountBalance(db, accountId); // warm the connection and cache
  const times: number[] = [];
  let lastLog = performance.now();
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    const balance = await accountBalance(db, accountId);
    times.push(performance.now() - t0);
    if (balance !== expected)
      throw new Error(`balance ${balance} differs from the sum of postings ${expected}`);
    if (performance.now() - lastLog > 2000) {
      log(`  ${i + 1}/${calls} calls`);
      lastLog = performance.now();
    }
  }
  times.sort((a, b) => a - b);
  const result = {
    label,
    calls,
    p50: percentile(times, 50),
    p95: percentile(times, 95),
    p99: percentile(times, 99),
    max: times[times.length - 1] ?? Number.NaN,
  };
  log(
    `accountBalance, ${label}: p50 ${result.p50.toFixed(2)} ms, p95 ${result.p95.toFixed(2)} ms, ` +
      `p99 ${result.p99.toFixed(2)} ms (${calls} calls)`,
  );
  return result;
}

/** The plan of exactly the query accountBalance sends, under EXPLAIN (ANALYZE, BUFFERS). */
async function explainBalance(db: Db, accountId: bigint): Promise<string[]> {
  let plan: string[] = [];
  const explaining = {
    async execute(query: SQLWrapper) {
      const { rows } = await db.execute<{ 'QUERY PLAN': string }>(sql`explain (analyze, buffers) ${query}`);
      plan = rows.map((r) => r['QUERY PLAN']);
      return { rows: [] };
    },
  } as unknown as DbExecutor;
  await accountBalance(explaining, accountId);
  return plan;
}

const PLAN_LINES = 45;

function printPlan(title: string, plan: string[]): void {
  log(`${title} (EXPLAIN (ANALYZE, BUFFERS)):`);
  for (const line of plan.slice(0, PLAN_LINES)) console.log(`    ${line}`);
  if (plan.length > PLAN_LINES) console.log(`    ... (${plan.length - PLAN_LINES} more lines)`);
}

/** The facts of a balance plan that decide its speed, in one line. */
function planFacts(plan: string[]): string {
  const scan = plan.find(
    (l) => /Index Only Scan|Index Scan|Seq Scan|Bitmap Heap Scan/.test(l) && l.includes('ledger_postings'),
  );
  const kind = scan?.includes('Index Only Scan')
    ? 'index-only scan'
    : `NOT index-only (${scan?.trim() ?? 'no scan found'})`;
  const estimated = /cost=[\d.]+ rows=(\d+)/.exec(scan ?? '')?.[1];
  const actual = /actual time=[\d.]+ rows=(\d+) loops=(\d+)/.exec(scan ?? '');
  const workers = plan.find((l) => l.includes('Workers Launched'))?.trim();
  // A parallel scan reports rows per process (averaged over loops) and estimates per process.
  const rows = actual
    ? `~${fmt(Number(actual[1]) * Number(actual[2]))} rows read, planner estimated ` +
      `${fmt(Number(estimated ?? 'NaN'))}${workers ? ' per process' : ''}`
    : '';
  const heap = plan.find((l) => l.includes('Heap Fetches'))?.trim() ?? 'Heap Fetches: ?';
  const time = plan.find((l) => l.startsWith('Execution Time'))?.trim() ?? '';
  return `${kind} on ${/using (\S+)/.exec(scan ?? '')?.[1] ?? '?'}, ${rows}, ${heap}, ${workers ? `parallel (${workers})` : 'not parallel'}, ${time}`;
}

async function sumOfPostings(db: Db, accountId: bigint): Promise<{ sum: bigint; count: number }> {
  const { rows } = await db.execute<{ sum: string; n: string }>(sql`
    select coalesce(sum(amount), 0)::text as sum, count(*)::text as n
    from ledger_postings where account_id = ${accountId.toString()}::bigint`);
  return { sum: BigInt(rows[0]?.sum ?? '0'), count: Number(rows[0]?.n ?? 0) };
}

async function accountId(db: Db, code: string): Promise<bigint> {
  const { rows } = await db.execute<{ id: string }>(
    sql`select id::text from ledger_accounts where code = ${code}`,
  );
  if (!rows[0]) throw new Error(`account ${code} does not exist`);
  return BigInt(rows[0].id);
}

/**
 * Set-based load: per chunk, one transaction with one INSERT ... SELECT generate_series into
 * ledger_entries and one INSERT ... SELECT of two postings per entry (the hot account credited,
 * in_transit debited), so every entry balances, has two postings, and gets them in its own
 * transaction; the database's triggers check all of it at commit.
 */
async function bulkLoad(
  db: Db,
  run: string,
  combo: Combo,
  hotId: bigint,
  transitId: bigint,
  entries: number,
): Promise<number> {
  const asset = `${combo.token.chainId}:${combo.token.address}`;
  const unit = (10n ** BigInt(combo.token.decimals) / 100n).toString();
  const t0 = performance.now();
  for (let from = 1; from <= entries; from += BULK_CHUNK) {
    const to = Math.min(entries, from + BULK_CHUNK - 1);
    const c0 = performance.now();
    await db.transaction(async (tx) => {
      const { rows } = await tx.execute<{ lo: string; hi: string }>(sql`
        with e as (
          insert into ledger_entries
            (idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, metadata, content_hash)
          select 'bench:' || ${run} || ':bulk:' || g, 'bench.bulk',
                 now() - make_interval(secs => (${entries}::bigint - g)::double precision * 30),
                 ${combo.storeId}, 'bench_bulk', g::text, '{}'::jsonb, md5(g::text)
          from generate_series(${from}::bigint, ${to}::bigint) g
          returning id
        )
        select min(id)::text as lo, max(id)::text as hi from e`);
      const range = rows[0];
      if (!range) throw new Error('bulk insert returned no id range');
      await tx.execute(sql`
        insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at)
        select e.id, x.account_id, ${asset}, x.sign * ((e.id % 100000) + 1) * ${unit}::numeric, e.occurred_at
        from ledger_entries e
        cross join (values (${hotId.toString()}::bigint, -1), (${transitId.toString()}::bigint, 1))
          as x(account_id, sign)
        where e.id between ${range.lo}::bigint and ${range.hi}::bigint and e.tx_id = pg_current_xact_id()`);
    });
    const done = to;
    const rate = (done * 2) / ((performance.now() - t0) / 1000);
    log(
      `  bulk load: ${fmt(done)}/${fmt(entries)} entries (chunk ${((performance.now() - c0) / 1000).toFixed(1)} s, ` +
        `${fmt(rate)} postings/s overall)`,
    );
  }
  return (performance.now() - t0) / 1000;
}

// ---------------------------------------------------------------------------------------------

async function describe(db: Db): Promise<Record<string, string>> {
  const { rows } = await db.execute<Record<string, string>>(sql`
    select current_setting('server_version') as server_version,
           current_setting('fsync') as fsync,
           current_setting('synchronous_commit') as synchronous_commit,
           current_setting('full_page_writes') as full_page_writes,
           current_setting('wal_sync_method') as wal_sync_method,
           current_setting('shared_buffers') as shared_buffers,
           current_setting('max_wal_size') as max_wal_size`);
  const cpus = os.cpus();
  return {
    cpu: `${cpus.length} x ${cpus[0]?.model.trim() ?? 'unknown'}`,
    memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    'load average at start (1/5/15 min)': os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / '),
    ...rows[0],
  };
}

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

async function main(): Promise<void> {
  let server: EphemeralPostgres | undefined;
  let stopping: Promise<void> | undefined;
  const stopServer = () => {
    stopping ??= server ? server.stop() : Promise.resolve();
    return stopping;
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping PostgreSQL`);
      void stopServer().finally(() => process.exit(130));
    });
  }
  const scratch = mkdtempSync(join(os.tmpdir(), 'stablebooks-bench-'));
  try {
    let url = process.env.DATABASE_URL;
    if (url) {
      log('using DATABASE_URL (its settings decide durability; bench rows stay in it)');
    } else {
      log('starting a durable ephemeral PostgreSQL (fsync, synchronous_commit, full_page_writes on)');
      server = await startEphemeralPostgres({ durable: true });
      url = server.url;
    }
    await runMigrations(url);
    const stats = createDatabase(url, { max: 2, applicationName: 'stablebooks-bench-stats' });
    try {
      await report(url, stats.db, scratch);
    } finally {
      await stats.close();
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    if (server) {
      log('stopping PostgreSQL');
      await stopServer();
    }
  }
}

async function report(url: string, statsDb: Db, scratch: string): Promise<void> {
  const machine = await describe(statsDb);
  log('machine:');
  for (const [k, v] of Object.entries(machine)) console.log(`    ${k}: ${v}`);

  const run = `${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
  const combos: Combo[] = [
    { storeId: `bench-${run}-a`, token: USDC_BASE },
    { storeId: `bench-${run}-a`, token: USDT_BNB },
    { storeId: `bench-${run}-b`, token: USDC_BASE },
    { storeId: `bench-${run}-c`, token: USDC_BASE },
  ];
  const hot = combos[0]!;
  const next = entryFactory(run, combos);

  // Baseline table and script.
  const table_ = `bench_baseline_${run}`;
  await statsDb.execute(
    sql.raw(`create table ${table_} (id bigserial primary key, client int not null, n int not null,
             payload text not null, created_at timestamptz not null default now())`),
  );
  const script = join(scratch, 'insert3.sql');
  writeFileSync(
    script,
    [
      'BEGIN;',
      ...[1, 2, 3].map(
        (n) => `INSERT INTO ${table_} (client, n, payload) VALUES (:client_id, ${n}, 'row ${n}');`,
      ),
      'END;',
      '',
    ].join('\n'),
  );

  // Every account exists (all five kinds, every combo) before anything is timed.
  const setup = createDatabase(url, { max: 1 });
  try {
    for (const combo of combos)
      for (const shape of ['exact', 'short', 'over'] as const)
        await postOnce(setup.db, () => next({ combo, shape }), 1, undefined);
    log('warm-up: 2 s of posting, not measured');
    const until = performance.now() + 2000;
    while (performance.now() < until) await postOnce(setup.db, next, 1, undefined);
  } finally {
    await setup.close();
  }

  const baselines: BaselineResult[] = [];
  const nodeBaselines: BaselineResult[] = [];
  let steps: Anatomy | undefined;
  const ledger: LedgerResult[] = [];
  for (const [clients, threads] of [
    [1, 1],
    [8, 2],
  ] as const) {
    baselines.push(await pgbench(url, statsDb, script, clients, threads));
    nodeBaselines.push(await runNodeBaseline(url, statsDb, table_, clients));
    if (PEER_ONLY) continue;
    for (const batch of [1, BATCH])
      for (const cached of [false, true])
        ledger.push(await runLedger(url, statsDb, next, { connections: clients, batch, cached }));
    ledger.push(
      await runLedger(url, statsDb, next, {
        connections: clients,
        batch: BATCH,
        cached: true,
        postEntries: true,
      }),
    );
    ledger.push(await runLedger(url, statsDb, next, { connections: clients, batch: 0, cached: true }));
    if (clients === 1) steps = await anatomy(url, next, 500);
  }
  const baselineFor = (clients: number) => baselines.find((b) => b.clients === clients)?.tps ?? Number.NaN;
  const nodeBaselineFor = (clients: number) =>
    nodeBaselines.find((b) => b.clients === clients)?.tps ?? Number.NaN;

  // 2b. Ours and the peer, with 10 and 50 hot accounts; and 2-line entries (one transfer each).
  await createPeer(statsDb);
  const peerRows: PeerRow[] = [];
  for (const hot of [10, 50])
    peerRows.push(
      ...(await peerComparison(url, statsDb, run, hot, { connections: [1, 8], batches: [1, BATCH] })),
    );
  peerRows.push(
    ...(await peerComparison(url, statsDb, run, 10, { twoLines: true, connections: [1, 8], batches: [1] })),
  );
  if (PEER_ONLY) {
    console.log('\n## Machine\n');
    for (const [k, v] of Object.entries(machine)) console.log(`- ${k}: ${v}`);
    console.log('');
    console.log(
      table(
        ['baseline', 'conns', 'TPS', 'commits per WAL flush', `machine CPU (of ${os.cpus().length})`],
        [...baselines, ...nodeBaselines].map((b, i) => [
          i < baselines.length ? 'pgbench 3-row INSERT tx' : 'node (pg + drizzle), same 3-row INSERT tx',
          String(b.clients),
          fmt(b.tps),
          b.stats.commitsPerFlush.toFixed(1),
          b.stats.machineCores === null ? '?' : b.stats.machineCores.toFixed(1),
        ]),
      ),
    );
    printPeer(peerRows, baselineFor);
    console.log(
      `\n- load average at end (1/5/15 min): ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' / ')}`,
    );
    await statsDb.execute(sql.raw(`drop table ${table_}`));
    return;
  }

  // 4a. What the hash chain costs posting (the daemon's path at 8 connections).
  const sealRounds = await sealingImpact(
    url,
    statsDb,
    async () =>
      (await runLedger(url, statsDb, next, { connections: 8, batch: 1, cached: true })).entriesPerSecond,
    { rounds: Math.round(SEAL_ROUNDS), everyMs: SEAL_EVERY_MS },
  );

  // 3. Balance latency at ~1M postings on one account.
  const hotCode = accountCode(account('income:sales', hot.storeId, hot.token));
  const hotId = await accountId(statsDb, hotCode);
  const transitId = await accountId(
    statsDb,
    accountCode(account('assets:in_transit', hot.storeId, hot.token)),
  );
  const existing = (await sumOfPostings(statsDb, hotId)).count;
  const toLoad = Math.max(0, Math.round(TARGET_POSTINGS) - existing - Math.round(TAIL_ENTRIES));
  log(`bulk load: ${hotCode} has ${fmt(existing)} postings; loading ${fmt(toLoad)} entries of 2 postings`);
  const loadSeconds = await bulkLoad(statsDb, run, hot, hotId, transitId, toLoad);
  log(`bulk load: ${fmt(toLoad)} entries, ${fmt(toLoad * 2)} postings in ${loadSeconds.toFixed(1)} s`);
  // Stands in for autovacuum, which an insert-only table gets too: sets the visibility map
  // that index-only scans need, and fresh statistics.
  let t0 = performance.now();
  await statsDb.execute(sql`vacuum (analyze) ledger_entries, ledger_postings`);
  const vacuumSeconds = (performance.now() - t0) / 1000;
  log(`vacuum (analyze): ${vacuumSeconds.toFixed(1)} s`);

  const balanceDb = createDatabase(url, { max: 1, applicationName: 'stablebooks-bench-balance' });
  const latencies: LatencyResult[] = [];
  let checkpointSeconds = 0;
  let checkpointAccounts = 0;
  let incrementalSeconds = 0;
  const planSummary = { full: '?', tail: '?' };
  let postingsOnHot = 0;
  try {
    let truth = await sumOfPostings(balanceDb.db, hotId);
    postingsOnHot = truth.count;
    log(`${hotCode}: ${fmt(truth.count)} postings, no checkpoint yet`);
    const fullPlan = await explainBalance(balanceDb.db, hotId);
    printPlan('balance plan, no checkpoint', fullPlan);
    planSummary.full = planFacts(fullPlan);
    latencies.push(
      await balanceLatency(
        balanceDb.db,
        hotId,
        'no checkpoint (whole account)',
        Math.round(BALANCE_CALLS),
        truth.sum,
      ),
    );

    t0 = performance.now();
    const cp = await checkpointBalances(balanceDb.db);
    checkpointSeconds = (performance.now() - t0) / 1000;
    checkpointAccounts = cp.accounts;
    log(
      `checkpointBalances: ${checkpointSeconds.toFixed(2)} s (${cp.accounts} accounts, horizon ${cp.horizon})`,
    );

    log(`posting a tail of ${fmt(TAIL_ENTRIES)} entries on ${hot.storeId} after the checkpoint`);
    const tailDb = createDatabase(url, { max: 1 });
    try {
      const cache = createAccountCache();
      for (let n = 0; n < TAIL_ENTRIES; n += BATCH)
        await postOnce(tailDb.db, () => next({ combo: hot }), Math.min(BATCH, TAIL_ENTRIES - n), cache);
    } finally {
      await tailDb.close();
    }
    truth = await sumOfPostings(balanceDb.db, hotId);
    postingsOnHot = truth.count;
    log(`${hotCode}: ${fmt(truth.count)} postings, ${fmt(TAIL_ENTRIES)} after the checkpoint`);
    const tailPlan = await explainBalance(balanceDb.db, hotId);
    printPlan('balance plan, after checkpoint', tailPlan);
    planSummary.tail = planFacts(tailPlan);
    latencies.push(
      await balanceLatency(
        balanceDb.db,
        hotId,
        `after checkpoint + ${fmt(TAIL_ENTRIES)}-entry tail`,
        Math.round(BALANCE_CALLS),
        truth.sum,
      ),
    );

    t0 = performance.now();
    await checkpointBalances(balanceDb.db);
    incrementalSeconds = (performance.now() - t0) / 1000;
    log(`checkpointBalances again (incremental, small tail): ${incrementalSeconds.toFixed(3)} s`);
  } finally {
    await balanceDb.close();
  }

  // 4b. Sealing the bulk load, and recomputing the whole chain.
  const chain = await chainRates(url);

  // 5. Results.
  const cores = (s: PhaseStats) => (s.machineCores === null ? '?' : s.machineCores.toFixed(1));
  console.log('\n## Machine\n');
  for (const [k, v] of Object.entries(machine)) console.log(`- ${k}: ${v}`);
  console.log(`\n## Posting (${SECONDS} s per row, durable commits)\n`);
  console.log(
    table(
      [
        'what',
        'conns',
        'entries/s',
        'postings/s',
        'commits/s',
        'ratio to pgbench TPS',
        'ratio to node 3-row TPS',
        'commits per WAL flush',
        'WAL B/commit',
        'node CPU',
        `machine CPU (of ${os.cpus().length})`,
      ],
      [
        ...baselines.map((b) => [
          'pgbench 3-row INSERT tx',
          String(b.clients),
          '',
          '',
          fmt(b.tps),
          '1.00',
          '',
          b.stats.commitsPerFlush.toFixed(1),
          fmt(b.stats.walBytesPerCommit),
          '',
          cores(b.stats),
        ]),
        ...nodeBaselines.map((b) => [
          'node (pg + drizzle), same 3-row INSERT tx',
          String(b.clients),
          '',
          '',
          fmt(b.tps),
          (b.tps / baselineFor(b.clients)).toFixed(2),
          '1.00',
          b.stats.commitsPerFlush.toFixed(1),
          fmt(b.stats.walBytesPerCommit),
          b.stats.nodeCores.toFixed(2),
          cores(b.stats),
        ]),
        ...ledger.map((r) => [
          `ledger, ${r.label}`,
          String(r.connections),
          fmt(r.entriesPerSecond),
          fmt(r.postingsPerSecond),
          fmt(r.transactions / r.seconds),
          (r.entriesPerSecond / baselineFor(r.connections)).toFixed(2),
          (r.entriesPerSecond / nodeBaselineFor(r.connections)).toFixed(2),
          r.stats.commitsPerFlush.toFixed(1),
          fmt(r.stats.walBytesPerCommit),
          r.stats.nodeCores.toFixed(2),
          cores(r.stats),
        ]),
      ],
    ),
  );
  printPeer(peerRows, baselineFor);
  if (steps) {
    const b1 = baselineFor(1);
    console.log(
      `\n## Where one entry's time goes (1 connection, no AccountCache, ${steps.entries} entries)\n`,
    );
    console.log(
      table(
        ['step', 'mean ms'],
        [
          ['BEGIN', steps.begin.toFixed(3)],
          ["ensureAccounts (upsert of the entry's accounts)", steps.ensureAccounts.toFixed(3)],
          ['insert entry + postings (one statement, row triggers, FK checks)', steps.insert.toFixed(3)],
          ['deferred balance check (SET CONSTRAINTS ALL IMMEDIATE)', steps.balanceCheck.toFixed(3)],
          ['COMMIT (WAL flush)', steps.commit.toFixed(3)],
          ['total per entry', steps.total.toFixed(3)],
          ['for comparison: one `select 1` round trip', steps.roundTrip.toFixed(3)],
          ['for comparison: one pgbench 3-row transaction, 1 client', (1000 / b1).toFixed(3)],
        ],
      ),
    );
  }
  console.log(`\n## Balance of one account (${fmt(postingsOnHot)} postings)\n`);
  console.log(
    table(
      ['what', 'calls', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms'],
      latencies.map((l) => [
        `accountBalance, ${l.label}`,
        String(l.calls),
        l.p50.toFixed(2),
        l.p95.toFixed(2),
        l.p99.toFixed(2),
        l.max.toFixed(2),
      ]),
    ),
  );
  console.log(
    `\n- bulk load: ${fmt(toLoad)} entries / ${fmt(toLoad * 2)} postings in ${loadSeconds.toFixed(1)} s` +
      ` (${fmt((toLoad * 2) / loadSeconds)} postings/s), then VACUUM (ANALYZE) ${vacuumSeconds.toFixed(1)} s`,
  );
  console.log(
    `- checkpointBalances: ${checkpointSeconds.toFixed(2)} s first time (${checkpointAccounts} accounts), ` +
      `${incrementalSeconds.toFixed(3)} s incremental after the tail`,
  );
  console.log(`- plan without checkpoint: ${planSummary.full}`);
  console.log(`- plan after checkpoint: ${planSummary.tail}`);
  printSealing(sealRounds, chain);

  // One entry at a time as the daemon posts it: with its process-wide AccountCache, inside the
  // transaction of the fact (one entry per tx), or alone (one statement).
  const single = ledger.filter((r) => (r.batch === 1 || r.batch === 0) && r.cached);
  const after = latencies[latencies.length - 1];
  console.log(
    `- load average at end (1/5/15 min): ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')} (other processes on the machine make the figures noisy)`,
  );
  console.log('\n## Targets\n');
  for (const r of single) {
    const ratio = r.entriesPerSecond / baselineFor(r.connections);
    console.log(
      `- ${r.label}, ${r.connections} conn: ${(ratio * 100).toFixed(0)}% of pgbench TPS ` +
        `(target >= 40%): ${ratio >= 0.4 ? 'met' : 'NOT met'}`,
    );
  }
  if (after) {
    console.log(
      `- balance after checkpoint at ${fmt(postingsOnHot)} postings: p99 ${after.p99.toFixed(2)} ms ` +
        `(target < 10 ms): ${after.p99 < 10 ? 'met' : 'NOT met'}`,
    );
  }
  await statsDb.execute(sql.raw(`drop table ${table_}`));
}

function printSealing(rounds: SealingRound[], chain: Awaited<ReturnType<typeof chainRates>>): void {
  const variants = [
    ['before', 'before migration 0017 (no tx_id index, no sealer)'],
    ['index', 'tx_id index, no sealer'],
    ['sealer', `tx_id index + sealer every ${SEAL_EVERY_MS} ms`],
  ] as const;
  const mean = (v: SealingRound['variant']) => {
    const of = rounds.filter((r) => r.variant === v);
    return of.reduce((s, r) => s + r.entriesPerSecond, 0) / Math.max(1, of.length);
  };
  const before = mean('before');
  console.log(
    `\n## Hash chain: posting at 8 connections, one entry per tx + AccountCache (${SECONDS} s per round)\n`,
  );
  console.log(
    table(
      [
        'what',
        ...rounds.filter((r) => r.variant === 'before').map((r) => `round ${r.round}`),
        'mean entries/s',
        'vs before',
      ],
      variants.map(([v, label]) => [
        label,
        ...rounds.filter((r) => r.variant === v).map((r) => fmt(r.entriesPerSecond)),
        fmt(mean(v)),
        `${(((mean(v) - before) / before) * 100).toFixed(1)}%`,
      ]),
    ),
  );
  console.log(
    `\n- sealing ${fmt(chain.sealed)} bulk-loaded entries: ${chain.sealSeconds.toFixed(1)} s ` +
      `(${fmt(chain.sealed / chain.sealSeconds)} entries/s)`,
  );
  console.log(
    `- recomputing the whole chain (ledger verify): ${fmt(chain.verified)} seals in ${chain.verifySeconds.toFixed(1)} s ` +
      `(${fmt(chain.verified / chain.verifySeconds)} entries/s)`,
  );
  const drop = (before - mean('sealer')) / before;
  console.log(
    `- target: posting falls by at most 10% with the chain: ${(drop * 100).toFixed(1)}% ` +
      `(${drop <= 0.1 ? 'met' : 'NOT met'})`,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
