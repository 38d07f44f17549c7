/**
 * Intake benchmark: the daemon's webhook intake in its own process against PostgreSQL's own raw
 * speed (pgbench) on the same server in the same run, and the workers' end-to-end posting rate.
 * Run with `npm run bench:intake`.
 *
 * 1. Baseline: pgbench TPS of a single-row INSERT transaction at 50 clients (before and after
 *    the intake run, since the machines are noisy).
 * 2. Intake: a `stablebooks start --role intake` process; signed checkout webhooks (each with its
 *    own webhook id and nonce, signed just before the run) POSTed to /webhooks/checkout over
 *    loopback at 50 connections for BENCH_SECONDS by wrk (bench/wrkLoad.ts: a C load generator,
 *    like pgbench's client), after a short warm-up. Accepted (200) webhooks per second, p50/p99 latency, the rows really stored,
 *    commits per WAL flush, the daemon's resident memory (peak during the run, then while idle
 *    until it is under target, at most IDLE_SECONDS) and CPU.
 * 3. End to end: BENCH_PAYMENTS intents paid in the sandbox (on anvil) whose webhooks reach a
 *    fresh intake process on a fresh database and are stored with their jobs; then BENCH_WORKERS
 *    `--role worker` processes start and drain them: fetch the intent from the sandbox, record
 *    the facts, post rule 1, mark the webhook processed. Payments (entries) per second from the
 *    first to the last processed webhook, CPU per payment, and what PostgreSQL did per payment
 *    (pg_stat_statements: statements, time, rows).
 * 4. Latency: BENCH_LATENCY_RATE payments a second (default 200) for BENCH_LATENCY_SECONDS (60)
 *    into one intake and one worker; p50/p99 from the intake's 200 to the rule-1 entry's commit
 *    (track_commit_timestamp). See `latencyPhase`.
 * Diagnostics between 2 and 3: the HTTP ceiling (bare fastify) and the ladder
 * (bench/intakeLadderServer.ts: the intake's route answering after verifying, then after also
 * storing), to show which step costs what.
 *
 * Every measured phase starts with a CHECKPOINT (see `checkpoint`). Needs wrk (Debian package
 * `wrk`) beside PostgreSQL's pgbench. Starts its own durable PostgreSQL (fsync,
 * synchronous_commit, full_page_writes on), Redis and sandbox, and stops them all, also on error or Ctrl-C. Environment: BENCH_SECONDS (default 10),
 * BENCH_PAYMENTS (default 2000), BENCH_WORKERS (default 1), BENCH_PHASES (default
 * `intake,e2e,latency`: which of 1-2, 3 and 4 run), BENCH_CPU_PROF (a folder: the daemon
 * processes write V8 CPU profiles there when they stop). No timing is asserted: the figures
 * are printed, with a markdown block for docs/benchmarks.md.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createConnection } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { systemClock } from '../src/clock.ts';
import { createDatabase, type Database } from '../src/db/database.ts';
import { runMigrations } from '../src/db/migrate.ts';
import { startAnvil } from '../src/devservices/anvil.ts';
import { startManagedProcess } from '../src/devservices/childProcess.ts';
import { findBinary, postgresBinDirs } from '../src/devservices/findBinary.ts';
import { freePort } from '../src/devservices/freePort.ts';
import { type EphemeralPostgres, startEphemeralPostgres } from '../src/devservices/postgres.ts';
import { type EphemeralRedis, startEphemeralRedis } from '../src/devservices/redis.ts';
import { type RunningSandbox, runSandbox } from '../src/sandbox/runSandbox.ts';
import { sandboxConfigSchema } from '../src/sandbox/sandboxConfig.ts';
import { createSvcClient } from '../src/svc/client.ts';
import { signWebhook } from '../src/svc/signing/webhookSignature.ts';
import { type DaemonProcess, daemonEnv, startDaemonProcess } from '../test/helpers/daemonProcess.ts';
import { type Cleanups, fmt, log, positiveNumber, runBench, runCommand, sleep } from './benchKit.ts';
import { prepareRequests, runWrk } from './wrkLoad.ts';

const SECONDS = positiveNumber('BENCH_SECONDS', 10);
const PAYMENTS = Math.round(positiveNumber('BENCH_PAYMENTS', 2000));
const WORKERS = Math.round(positiveNumber('BENCH_WORKERS', 1));
const CONNECTIONS = 50;
const WARMUP_SECONDS = 3;
// V8 gives back the heap the run grew only when its memory reducer runs, some 30-45 s after the
// load stops here; the bench waits up to this long for the resident memory to fall under target.
const IDLE_SECONDS = 90;
/** Which phases run (BENCH_PHASES, comma-separated): intake (with its baselines and diagnostics), e2e, latency. */
const PHASES = new Set((process.env.BENCH_PHASES ?? 'intake,e2e,latency').split(',').map((p) => p.trim()));
// The latency phase pays 200 x its seconds intents before it measures (3-4 transactions each).
// Anvil mining a block per transaction slows with every block (226 transactions a second at
// first, 55 after 6,000 blocks, whatever its history settings), and the setup of 60 s at 200/s
// never finished; mining every half second instead keeps the chain short, and payments in flight
// by the hundred fill each block. The end-to-end phase alone keeps a block per transaction.
const BLOCK_TIME_SECONDS = PHASES.has('latency') ? 0.5 : undefined;
const PAY_CONCURRENCY = BLOCK_TIME_SECONDS ? 256 : 16;
const LATENCY_RATE = Math.round(positiveNumber('BENCH_LATENCY_RATE', 200));
const LATENCY_SECONDS = positiveNumber('BENCH_LATENCY_SECONDS', 60);
const TARGETS = {
  ratioToPgbench: 0.6,
  p99Ms: 50,
  rssDuringMb: 300,
  rssIdleMb: 150,
  endToEndPerSecond: 500,
  cpuPerPaymentMs: 2.0,
  latencyP99Ms: 2000,
};
const verdict = (ok: boolean) => (ok ? 'met' : '**missed**');

const mb = (bytes: number) => bytes / 1024 / 1024;

// ---------------------------------------------------------------------------------------------
// Counters that explain the figures: CPU of the machine and of processes, WAL flushes.

function machineCpu(): { busy: number; total: number } {
  const f = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - (f[3] ?? 0) - (f[4] ?? 0), total };
}

/** utime + stime of a process, in clock ticks (100 per second on Linux). */
function processTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/**
 * The bench's own servers, found by port (other PostgreSQL and Redis servers on a shared machine
 * are not counted): the postmaster and its children, and the redis-server.
 */
function serverPids(pgPort: number, redisPort: number): { postgres: number[]; redis: number[] } {
  let postmaster: number | undefined;
  const redis: number[] = [];
  const parentOf = new Map<number, number>();
  for (const entry of readdirSafe('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      parentOf.set(pid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      const p = cmd.indexOf('-p');
      if (cmd[0]?.endsWith('postgres') && p >= 0 && cmd[p + 1] === String(pgPort)) postmaster = pid;
      // redis-server rewrites its title to "redis-server 127.0.0.1:<port>".
      if (cmd[0]?.includes('redis-server') && cmd.join(' ').includes(`:${redisPort}`)) redis.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  const children = [...parentOf].filter(([, parent]) => parent === postmaster).map(([pid]) => pid);
  return { postgres: postmaster === undefined ? [] : [postmaster, ...children], redis };
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

interface CpuWindow {
  /** Busy cores of the whole machine, e.g. 1.9 of 2. */
  machineCores: number;
  /** Cores used by each named process group. */
  cores: Record<string, number>;
}

/**
 * Measures CPU use over `work`: the machine's, each named group of processes' and this
 * process's. Groups are sampled every 200 ms, so processes that start during the window (pgbench's
 * backends) count from their start, and those that exit keep their last sample.
 */
async function cpuOver<T>(
  groups: Record<string, () => number[]>,
  work: () => Promise<T>,
): Promise<{ result: T; cpu: CpuWindow }> {
  const hz = 100;
  const seen = Object.fromEntries(
    Object.keys(groups).map((name) => [name, new Map<number, { first: number; last: number }>()]),
  );
  const sample = (initial: boolean) => {
    for (const [name, pids] of Object.entries(groups)) {
      const map = seen[name]!;
      for (const pid of pids()) {
        const ticks = processTicks(pid);
        if (ticks === 0) continue;
        const known = map.get(pid);
        if (known) known.last = ticks;
        else map.set(pid, { first: initial ? ticks : 0, last: ticks });
      }
    }
  };
  const m0 = machineCpu();
  sample(true);
  const timer = setInterval(() => sample(false), 200);
  const self0 = process.cpuUsage();
  const t0 = performance.now();
  let result: T;
  try {
    result = await work();
  } finally {
    clearInterval(timer);
  }
  sample(false);
  const seconds = (performance.now() - t0) / 1000;
  const m1 = machineCpu();
  const cores: Record<string, number> = {};
  for (const [name, map] of Object.entries(seen)) {
    let ticks = 0;
    for (const { first, last } of map.values()) ticks += last - first;
    cores[name] = ticks / hz / seconds;
  }
  const self = process.cpuUsage(self0);
  cores['bench (load generator, sandbox)'] = (self.user + self.system) / 1e6 / seconds;
  const machineCores = ((m1.busy - m0.busy) / Math.max(1, m1.total - m0.total)) * os.cpus().length;
  return { result, cpu: { machineCores, cores } };
}

/** CPU time per item (webhook, transaction, payment) of each group, at `perSecond` items a second. */
const cpuPerItem = (cpu: CpuWindow, perSecond: number) =>
  Object.entries(cpu.cores)
    .map(([k, v]) => `${k} ${((v / Math.max(1e-9, perSecond)) * 1000).toFixed(3)} ms`)
    .join(', ');

const cpuText = (cpu: CpuWindow) =>
  `machine ${cpu.machineCores.toFixed(2)} of ${os.cpus().length} cores busy; ` +
  Object.entries(cpu.cores)
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(', ');

async function walCounters(pool: pg.Pool): Promise<{ commits: number; walSyncs: number; walBytes: number }> {
  const { rows } = await pool.query<{ commits: string; wal_sync: string; wal_bytes: string }>(`
    select (select sum(xact_commit) from pg_stat_database)::text as commits, wal_sync::text, wal_bytes::text
    from pg_stat_wal`);
  const r = rows[0];
  return {
    commits: Number(r?.commits ?? 0),
    walSyncs: Number(r?.wal_sync ?? 0),
    walBytes: Number(r?.wal_bytes ?? 0),
  };
}

/**
 * A CHECKPOINT before each measured phase, so that every phase starts from the same state: the
 * WAL segments written before are recycled for the next ones. Without it a fresh server creates
 * (zero-fills and syncs) a new 16 MB segment every second or two under load, and each creation
 * stalls the commits waiting on it for 50-70 ms: a cost of a new cluster, not of steady state.
 */
async function checkpoint(pool: pg.Pool): Promise<void> {
  await pool.query('checkpoint');
}

// ---------------------------------------------------------------------------------------------
// 1. pgbench: a single-row INSERT, its own transaction, 50 clients.

/** The running pgbench, whose CPU is the baseline's load generator. */
let pgbenchPid: number | undefined;

async function pgbench(
  url: string,
  scriptFile: string,
  protocol: 'simple' | 'extended' = 'simple',
): Promise<{ tps: number; latencyMs: number | null }> {
  const bin = findBinary({
    name: 'pgbench',
    debianPackage: 'postgresql',
    brewFormula: 'postgresql@15',
    extraDirs: postgresBinDirs(),
  });
  const args = [
    '-n',
    '-M',
    protocol,
    '-f',
    scriptFile,
    '-c',
    String(CONNECTIONS),
    '-j',
    String(os.cpus().length),
  ];
  args.push('-T', String(Math.max(1, Math.round(SECONDS))), url);
  const output = await runCommand(bin, args, {
    onStart: (pid) => {
      pgbenchPid = pid;
    },
  });
  const tps = /tps = ([\d.]+) \((?:without|excluding)/.exec(output) ?? /tps = ([\d.]+)/.exec(output);
  if (!tps?.[1]) throw new Error(`pgbench printed no tps:\n${output.slice(-2000)}`);
  const latency = /latency average = ([\d.]+) ms/.exec(output);
  return { tps: Number(tps[1]), latencyMs: latency?.[1] ? Number(latency[1]) : null };
}

/**
 * pgbench script of one webhook's nonce claim and inbox row as one statement, with a webhook's
 * headers and body: what the intake could do storing each webhook in its own transaction (as it
 * did before group commit, src/intake/inboxWriter.ts), sent the way the driver sends it
 * (extended protocol, unnamed statement). A diagnostic beside the single-row baseline.
 */
function intakeStatementScript(): string {
  const body = webhookBody(0, 'pgbench').replaceAll("'", "''");
  const headers = JSON.stringify({
    host: '127.0.0.1',
    'content-type': 'application/json',
    'content-length': String(body.length),
    'x-api-key': 'pk_bench',
    'x-webhook-id': 'pgbench',
    'x-webhook-timestamp': '1700000000',
    'x-webhook-nonce': randomUUID(),
    'x-webhook-signature': `v1=${randomBytes(32).toString('base64')}`,
  });
  return `\\set r random(1, 9000000000000000000)
with n as (
  insert into webhook_nonces (nonce, expires_at) values ('pgb-n-' || :r, now() + 600 * interval '1 second')
  on conflict (nonce) do update set expires_at = excluded.expires_at where webhook_nonces.expires_at < now()
  returning 1
), i as (
  insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body, error)
  select 'pgb-' || :r, 'st_a', 'checkout', 'received', '${headers}'::jsonb, convert_to('${body}', 'UTF8'), null
  where exists (select 1 from n)
  on conflict (webhook_id) do nothing
  returning 1
)
select exists (select 1 from n) as nonce_ok, exists (select 1 from i) as inserted;
`;
}

// ---------------------------------------------------------------------------------------------
// 2. Intake under load.

/** A checkout webhook body like the service's (about 700 bytes), for an intent we make up. */
function webhookBody(n: number, webhookId: string): string {
  const intent = randomBytes(12).toString('hex');
  return JSON.stringify({
    all_svc_transaction_id: randomBytes(12).toString('hex'),
    all_svc_checkout_intent_id: intent,
    webhook_id: webhookId,
    amount_cents: 2500 + (n % 1000),
    currency: 840,
    currency_symbol: 'USD',
    amount_coins: '25.000000',
    coin_contract_address: '0x1c7d4b196cb0c7b01d743fbc6116a902379c7238',
    coin_symbol: 'USDC',
    chain_id: 11155111,
    tx_hash: `0x${randomBytes(32).toString('hex')}`,
    tx_from: `0x${randomBytes(20).toString('hex')}`,
    payment_method_type: 1,
    user_id: `user-${n}`,
    order_id: `order-${n}`,
    user_name: 'Bench Buyer',
    extra_obj: { cart: `cart-${n}` },
    status: 20,
    actual_paid_amount: '25.000000',
  });
}

interface IntakeRun {
  accepted: number;
  other: number;
  errors: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Times wrk started its prepared webhooks again (repeats are duplicates, not stored). */
  wrapped: number;
}

/**
 * The HTTP ceiling of this machine, in the same run: a bare fastify process that parses the body
 * as bytes like the intake and answers 200 without verifying, storing or enqueuing, driven with
 * the same signed webhooks. No intake can accept more than this; the gap between the two is what
 * verification and durability cost.
 */
async function bareHttpCeiling(dir: string, prefix: string): Promise<IntakeRun> {
  const port = await freePort();
  const server = startManagedProcess(
    process.execPath,
    [
      '-e',
      `const app = require('fastify')({ bodyLimit: 1048576 });
       app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
       app.post('/webhooks/checkout', async () => ({ ok: true }));
       app.listen({ host: '127.0.0.1', port: ${port} }).then(() => console.log('ready'));`,
    ],
    { cwd: process.cwd() },
  );
  try {
    const deadline = Date.now() + 10_000;
    while (!server.output().includes('ready')) {
      if (Date.now() > deadline) throw new Error(`bare fastify did not start: ${server.output()}`);
      await sleep(50);
    }
    log(
      `bare HTTP ceiling: fastify answering 200 without verify or store, ${CONNECTIONS} connections, ${SECONDS} s`,
    );
    const run = await driveIntake(dir, `http://127.0.0.1:${port}`, prefix, SECONDS);
    log(`bare HTTP ceiling: ${fmt(run.perSecond)} requests/s, p99 ${run.p99} ms`);
    return run;
  } finally {
    await server.stop();
  }
}

/**
 * One step of the intake's ladder (bench/intakeLadderServer.ts): the daemon's HTTP server and
 * intake route doing the work up to `step` and answering 200, driven like the intake, with the
 * CPU of its process and of the servers. Where the intake's rate goes between the bare HTTP
 * ceiling and the full intake: verification, then the durable store, then the enqueue.
 */
async function ladderStep(
  dir: string,
  step: 'verify' | 'store',
  prefix: string,
  env: Record<string, string>,
  groups: Record<string, () => number[]>,
): Promise<IntakeRun & { cpu: CpuWindow }> {
  const port = await freePort();
  const server = startManagedProcess(
    process.execPath,
    ['--max-semi-space-size=4', '--import', 'tsx', 'bench/intakeLadderServer.ts'],
    {
      cwd: process.cwd(),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env, LADDER_STEP: step, PORT: String(port) },
    },
  );
  try {
    const deadline = Date.now() + 20_000;
    while (!server.output().includes('ready')) {
      if (Date.now() > deadline) throw new Error(`ladder server (${step}) did not start: ${server.output()}`);
      await sleep(50);
    }
    log(`ladder, up to ${step}: ${CONNECTIONS} connections, ${SECONDS} s`);
    const pid = server.child.pid;
    const { result, cpu } = await cpuOver({ [step]: () => (pid ? [pid] : []), ...groups }, () =>
      driveIntake(dir, `http://127.0.0.1:${port}`, prefix, SECONDS),
    );
    log(
      `ladder, up to ${step}: ${fmt(result.perSecond)}/s answered 200 (non-200 ${result.other}), p99 ${result.p99} ms; ` +
        `${cpuText(cpu)}; CPU per webhook ${cpuPerItem(cpu, result.perSecond)}`,
    );
    return { ...result, cpu };
  } finally {
    await server.stop();
  }
}

/** wrk's threads: one per core, as pgbench's -j. */
const WRK_THREADS = os.cpus().length;
/** Webhooks prepared per second of a run: more than this machine's HTTP ceiling, so none repeats. */
const PREPARED_PER_SECOND = 20_000;
/** The running wrk, whose CPU is the intake's load generator. */
let wrkPid: number | undefined;

/**
 * Signed checkout webhooks for one wrk run of `seconds`, each with its own id, nonce and body,
 * signed now (the intake accepts timestamps within 300 s, and a run starts seconds later).
 */
function prepareWebhooks(
  dir: string,
  url: string,
  apiKey: string,
  secret: string,
  seconds: number,
  tag: string,
) {
  const path = '/webhooks/checkout';
  const count = PREPARED_PER_SECOND * seconds;
  const t0 = performance.now();
  const prefix = prepareRequests(dir, tag, WRK_THREADS, count, new URL(url).host, (n) => {
    const webhookId = `bench-${tag}-${n}`;
    const body = webhookBody(n, webhookId);
    const signed = signWebhook({ secret, method: 'POST', path, webhookId, body, clock: systemClock });
    return {
      method: 'POST',
      path,
      headers: { 'Content-Type': 'application/json', 'X-API-Key': apiKey, ...signed },
      body,
    };
  });
  log(`prepared ${fmt(count)} signed webhooks for wrk in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return prefix;
}

/** wrk at CONNECTIONS connections sending prepared webhooks; accepted = answered 2xx. */
async function driveIntake(dir: string, url: string, prefix: string, seconds: number): Promise<IntakeRun> {
  const r = await runWrk({
    url: `${url}/webhooks/checkout`,
    dir,
    prefix,
    threads: WRK_THREADS,
    connections: CONNECTIONS,
    seconds,
    onStart: (pid) => {
      wrkPid = pid;
    },
  });
  if (r.wrapped > 0) log(`wrk ran out of prepared webhooks ${r.wrapped} time(s): the repeats are duplicates`);
  const accepted = r.requests - r.non2xx;
  return {
    accepted,
    other: r.non2xx,
    errors: r.errors,
    seconds: r.seconds,
    perSecond: accepted / r.seconds,
    p50: r.p50,
    p90: r.p90,
    p99: r.p99,
    max: r.max,
    wrapped: r.wrapped,
  };
}

/** Samples a process's RSS every 100 ms while `work` runs; the peak in bytes. */
async function peakRss<T>(proc: DaemonProcess, work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = proc.rssBytes() ?? 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, proc.rssBytes() ?? 0);
  }, 100);
  try {
    const result = await work();
    return { result, peak: Math.max(peak, proc.rssBytes() ?? 0) };
  } finally {
    clearInterval(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// Orchestration.

async function createDb(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function run(cleanups: Cleanups): Promise<void> {
  const dir = mkdtempSync(join(os.tmpdir(), 'stablebooks-bench-intake-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  log(
    `machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? '?'}, ${fmt(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );

  log('starting a durable PostgreSQL (fsync on) and Redis');
  const [postgres, redis] = await Promise.all([
    // pg_stat_statements to count what each payment costs PostgreSQL; commit timestamps to date
    // each rule-1 entry's commit for the latency phase.
    startEphemeralPostgres({
      durable: true,
      settings: { shared_preload_libraries: 'pg_stat_statements', track_commit_timestamp: 'on' },
    }),
    startEphemeralRedis(),
  ]);
  cleanups.push(
    () => (postgres as EphemeralPostgres).stop(),
    () => (redis as EphemeralRedis).stop(),
  );
  const admin = new pg.Pool({ connectionString: postgres.url, max: 2 });
  cleanups.push(() => admin.end());
  await admin.query('create extension if not exists pg_stat_statements');
  const pgVersion =
    (await admin.query<{ v: string }>('select current_setting($$server_version$$) as v')).rows[0]?.v ?? '?';
  const redisVersion = /redis_version:(\S+)/.exec(String(await redisInfo(redis.url)))?.[1] ?? '?';
  const intakeUrl = await createDb(postgres.url, 'bench_intake');
  await runMigrations(intakeUrl);

  // The sandbox: the store's webhooks (phase 3) go to the intake's port; phase 2 signs with the
  // same credentials.
  const intakePort = await freePort();
  const apiKey = `pk_bench_${randomBytes(4).toString('hex')}`;
  const apiSecret = `sk_bench_${randomBytes(16).toString('hex')}`;
  log(
    `starting the sandbox on anvil (${BLOCK_TIME_SECONDS ? `a block every ${BLOCK_TIME_SECONDS} s` : 'a block per transaction'})`,
  );
  const anvil = await startAnvil({ chainId: 11155111, blockTimeSeconds: BLOCK_TIME_SECONDS });
  cleanups.push(() => anvil.stop());
  const sandbox: RunningSandbox = await runSandbox({
    config: sandboxConfigSchema.parse({
      rate_limit: { requests_per_second: 1_000_000, burst: 1_000_000 },
      businesses: [
        {
          business_id: 'biz_1',
          stores: [
            {
              store_id: 'st_a',
              api_key: apiKey,
              api_secret: apiSecret,
              checkout_webhook_url: `http://127.0.0.1:${intakePort}/webhooks/checkout`,
              accepted_stable_coins: [1, 2],
            },
          ],
        },
      ],
    }),
    host: '127.0.0.1',
    port: 0,
    chains: [11155111],
    rpcUrls: new Map([[11155111, anvil.rpcUrl]]),
    seed: 'bench',
  });
  cleanups.push(() => sandbox.stop());
  const chain = [...sandbox.world.chains.values()][0]!;
  const wallets = {
    [chain.chainId]: {
      merchant: await chain.wallet('merchant:st_a'),
      custody: await chain.wallet('custody:biz_1'),
    },
  };
  const envFor = (databaseUrl: string, queuePrefix: string, label: string) =>
    daemonEnv({
      dir: join(dir, label),
      databaseUrl,
      redisUrl: redis.url,
      svcBaseUrl: sandbox.url,
      stores: [
        {
          storeId: 'st_a',
          businessId: 'biz_1',
          apiKey,
          apiSecret,
          wallets,
        },
      ],
      chains: [
        {
          chainId: chain.chainId,
          rpcUrl: chain.rpcUrl,
          tokens: { USDT: chain.tokens.USDT.address, USDC: chain.tokens.USDC.address },
          decimals: chain.decimals,
        },
      ],
      queuePrefix,
      logLevel: 'info',
    });
  const procs: DaemonProcess[] = [];
  cleanups.push(() => Promise.all(procs.map((p) => p.stop())));
  const start = async (label: string, roles: string, env: Record<string, string>, port?: number) => {
    const proc = await startDaemonProcess({
      label,
      roles,
      env,
      port: port ?? (await freePort()),
      logDir: dir,
      // BENCH_CPU_PROF=<dir>: each daemon process writes a V8 CPU profile there when it stops.
      nodeFlags: process.env.BENCH_CPU_PROF
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
        : [],
    });
    procs.push(proc);
    return proc;
  };

  const client = createSvcClient({
    baseUrl: sandbox.url,
    credentials: { apiKey, apiSecret, signedResponse: false },
    retry: { maxAttempts: 3 },
  });
  /** Creates and pays `count` intents in the sandbox, `concurrency` at a time (their webhooks go to intakePort). */
  const payIntents = async (count: number, orderPrefix: string, concurrency = PAY_CONCURRENCY) => {
    let next = 0;
    const started = performance.now();
    const progress = setInterval(() => {
      const seconds = (performance.now() - started) / 1000;
      log(`  paid ${fmt(next)} of ${fmt(count)} (${fmt(next / seconds)}/s)`);
    }, 15_000);
    cleanups.push(async () => clearInterval(progress));
    try {
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < count) {
            const i = next++;
            const created = await client.createCheckoutIntent({
              stable_coin: i % 2 === 0 ? 1 : 2,
              amount_cents: BigInt(1000 + (i % 100_000)),
              order_id: `${orderPrefix}-${i}`,
            });
            const res = await fetch(
              `${sandbox.url}/_sandbox/intents/${created.allsvc_checkout_intent_id}/pay`,
              {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: '{}',
              },
            );
            if (res.status !== 200) throw new Error(`pay: ${res.status} ${await res.text()}`);
          }
        }),
      );
    } finally {
      clearInterval(progress);
    }
  };

  /**
   * Webhook to booked under load: LATENCY_RATE payments a second for LATENCY_SECONDS into one
   * intake and one worker on a fresh database, each webhook's latency from the intake's 200 (as the
   * bench saw it) to the commit of its rule-1 entry (PostgreSQL's commit timestamp). The sandbox
   * pays slower than that on anvil, so the intents are paid first with their webhooks captured on
   * the intake's port, then sent at the rate, each signed afresh just before it goes.
   */
  const latencyPhase = async () => {
    const count = LATENCY_RATE * LATENCY_SECONDS;
    const captured: Array<{ webhookId: string; intentId: string; body: string }> = [];
    const capture = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const intentId = String(
          (JSON.parse(body) as { all_svc_checkout_intent_id?: string }).all_svc_checkout_intent_id,
        );
        captured.push({ webhookId: String(req.headers['x-webhook-id']), intentId, body });
        res.statusCode = 200;
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => capture.listen(intakePort, '127.0.0.1', resolve));
    log(`latency: paying ${fmt(count)} intents in the sandbox, their webhooks captured`);
    const payStart = performance.now();
    try {
      await payIntents(count, 'latency');
      while (new Set(captured.map((c) => c.intentId)).size < count) await sleep(200);
    } finally {
      await new Promise<void>((resolve) => capture.close(() => resolve()));
    }
    log(`latency: ${fmt(count)} paid in ${((performance.now() - payStart) / 1000).toFixed(1)} s`);
    const firsts = [...new Map(captured.map((c) => [c.intentId, c])).values()];

    const url = await createDb(postgres.url, 'bench_latency');
    await runMigrations(url);
    const env = envFor(url, 'bench-latency', 'latency');
    const intake = await start('intake-latency', 'intake', env, intakePort);
    const worker = await start('worker-latency', 'worker', env);
    const db: Database = createDatabase(url, { max: 2 });
    cleanups.push(() => db.close());
    const answeredAt = new Map<string, number>();
    let refused = 0;
    const path = '/webhooks/checkout';
    const sendOne = async (w: (typeof firsts)[number]) => {
      const signed = signWebhook({
        secret: apiSecret,
        method: 'POST',
        path,
        webhookId: w.webhookId,
        body: w.body,
        clock: systemClock,
      });
      const res = await fetch(`${intake.url}${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': apiKey, ...signed },
        body: w.body,
      });
      await res.arrayBuffer();
      if (res.status === 200) answeredAt.set(w.intentId, Date.now());
      else refused += 1;
    };
    log(`latency: ${LATENCY_RATE} webhooks a second for ${LATENCY_SECONDS} s into one intake and one worker`);
    const inFlight: Promise<void>[] = [];
    const { cpu } = await cpuOver(
      {
        intake: () => [intake.pid],
        worker: () => [worker.pid],
        postgres: () => servers().postgres,
        redis: () => servers().redis,
      },
      async () => {
        const t0 = performance.now();
        let sent = 0;
        while (sent < firsts.length) {
          const due = Math.min(
            firsts.length,
            Math.floor(((performance.now() - t0) / 1000) * LATENCY_RATE) + 1,
          );
          while (sent < due) inFlight.push(sendOne(firsts[sent++]!));
          await sleep(5);
        }
        await Promise.all(inFlight);
        const sendSeconds = (performance.now() - t0) / 1000;
        log(
          `latency: ${fmt(firsts.length)} sent in ${sendSeconds.toFixed(1)} s (${fmt(firsts.length / sendSeconds)}/s), ${refused} refused`,
        );
        const deadline = Date.now() + 600_000;
        for (;;) {
          const { rows } = await db.db.execute<{ n: string }>(
            sql`select count(*)::text as n from ledger_entries where kind = 'checkout.confirmed'`,
          );
          if (Number(rows[0]?.n) >= answeredAt.size) break;
          if (Date.now() > deadline)
            throw new Error('latency: the worker did not book every payment in 10 minutes');
          await sleep(200);
        }
      },
    );
    const { rows } = await db.db.execute<{ ref_id: string; committed: string }>(sql`
      select ref_id, (extract(epoch from pg_xact_commit_timestamp(xmin)) * 1000)::text as committed
      from ledger_entries where kind = 'checkout.confirmed'`);
    const latencies = rows
      .map((r) => {
        const answered = answeredAt.get(r.ref_id);
        return answered === undefined ? undefined : Number(r.committed) - answered;
      })
      .filter((l): l is number => l !== undefined)
      .sort((a, b) => a - b);
    const q = (p: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? Number.NaN;
    const [p50, p99, max] = [q(0.5), q(0.99), latencies.at(-1) ?? Number.NaN];
    log(
      `latency: ${fmt(latencies.length)} payments, intake 200 to rule-1 commit p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, max ${max.toFixed(0)} ms; ${cpuText(cpu)}`,
    );
    await Promise.all([intake.stop(), worker.stop()]);
    procs.length = 0;
    return {
      rows: [
        `| webhook to booked: intake 200 to the rule-1 entry's commit, ${LATENCY_RATE} payments/s for ${LATENCY_SECONDS} s, 1 intake + 1 worker, p50 / p99 (max) | ${p50.toFixed(0)} / ${p99.toFixed(0)} ms (${max.toFixed(0)} ms) | p99 < ${TARGETS.latencyP99Ms} ms | ${verdict(p99 < TARGETS.latencyP99Ms)} |`,
      ],
      counters: `Latency run: ${fmt(latencies.length)} payments, ${refused} refused; ${cpuText(cpu)}; CPU per payment ${cpuPerItem(cpu, LATENCY_RATE)}.`,
    };
  };

  const servers = () => serverPids(Number(new URL(postgres.url).port), Number(new URL(redis.url).port));
  const intakePhase = PHASES.has('intake')
    ? await (async () => {
        // 1. Baselines, with the CPU they take.
        const singleInsert = join(dir, 'single-insert.sql');
        writeFileSync(singleInsert, "insert into bench_single_insert (body) values (repeat('x', 700));\n");
        const intakeStatement = join(dir, 'intake-statement.sql');
        writeFileSync(intakeStatement, intakeStatementScript());
        const intakePool = new pg.Pool({ connectionString: intakeUrl, max: 2 });
        cleanups.push(() => intakePool.end());
        await intakePool.query(
          'create table bench_single_insert (id bigserial primary key, body text not null)',
        );
        const baselineRun = async (
          label: string,
          file: string,
          protocol: 'simple' | 'extended' = 'simple',
        ) => {
          await checkpoint(admin);
          log(`pgbench: ${label}, ${CONNECTIONS} clients, ${SECONDS} s`);
          const wal0 = await walCounters(admin);
          const { result, cpu } = await cpuOver(
            { postgres: () => servers().postgres, 'pgbench client': () => (pgbenchPid ? [pgbenchPid] : []) },
            () => pgbench(intakeUrl, file, protocol),
          );
          delete cpu.cores['bench (load generator, sandbox)'];
          const wal1 = await walCounters(admin);
          const perFlush = (wal1.commits - wal0.commits) / Math.max(1, wal1.walSyncs - wal0.walSyncs);
          log(
            `pgbench: ${fmt(result.tps)} TPS, mean latency ${result.latencyMs} ms, ${perFlush.toFixed(1)} commits per WAL flush; ${cpuText(cpu)}`,
          );
          return { ...result, cpu, perFlush };
        };
        const before = await baselineRun('single-row INSERT', singleInsert);
        const statementOnly = await baselineRun(
          'one webhook per statement (nonce claim + inbox row, no group commit), extended protocol',
          intakeStatement,
          'extended',
        );

        // 2. Intake.
        const intake = await start(
          'intake',
          'intake',
          envFor(intakeUrl, 'bench-intake', 'intake'),
          intakePort,
        );
        const rssStart = intake.rssBytes() ?? 0;
        log(
          `intake process ${intake.pid} up, RSS ${fmt(mb(rssStart))} MB (V8 heap ${fmt(mb(await intake.metric('nodejs_heap_size_used_bytes')))} MB used); warm-up ${WARMUP_SECONDS} s`,
        );
        const warm = await driveIntake(
          dir,
          intake.url,
          prepareWebhooks(dir, intake.url, apiKey, apiSecret, WARMUP_SECONDS, 'warm'),
          WARMUP_SECONDS,
        );
        log(`warm-up: ${fmt(warm.perSecond)} accepted/s, p99 ${warm.p99} ms`);
        const wal0 = await walCounters(admin);
        const batches0 = await inboxBatches(intake);
        const rows0 = Number(
          (await intakePool.query<{ n: string }>('select count(*) as n from webhook_inbox')).rows[0]?.n,
        );
        const runPrefix = prepareWebhooks(dir, intake.url, apiKey, apiSecret, SECONDS, 'run');
        await checkpoint(admin);
        log(`intake: ${CONNECTIONS} connections, ${SECONDS} s`);
        const { result: measured, peak } = await peakRss(intake, () =>
          cpuOver(
            {
              intake: () => [intake.pid],
              postgres: () => servers().postgres,
              redis: () => servers().redis,
              'wrk (load generator)': () => (wrkPid ? [wrkPid] : []),
            },
            () => driveIntake(dir, intake.url, runPrefix, SECONDS),
          ),
        );
        const { result: answered, cpu: intakeCpu } = measured;
        await sleep(1000);
        const wal1 = await walCounters(admin);
        const rows1 = Number(
          (await intakePool.query<{ n: string }>('select count(*) as n from webhook_inbox')).rows[0]?.n,
        );
        // Had wrk run out of webhooks, its repeats were answered 200 as duplicates: then only the rows
        // stored count as accepted.
        const accepted =
          answered.wrapped > 0 ? Math.min(answered.accepted, rows1 - rows0) : answered.accepted;
        const load = { ...answered, accepted, perSecond: accepted / answered.seconds };
        const jobs = await redisKeys(redis.url);
        log(
          `intake: ${fmt(load.perSecond)} accepted/s (${fmt(load.accepted)} in ${load.seconds} s), non-200 ${load.other}, errors ${load.errors}; ` +
            `latency p50 ${load.p50} ms, p90 ${load.p90} ms, p99 ${load.p99} ms, max ${load.max} ms`,
        );
        log(
          `intake: ${fmt(rows1 - rows0)} inbox rows stored; ${fmt(jobs)} keys in Redis (a hash per job); RSS peak ${fmt(mb(peak))} MB`,
        );
        const commits = Math.max(1, wal1.commits - wal0.commits);
        const commitsPerFlush = commits / Math.max(1, wal1.walSyncs - wal0.walSyncs);
        log(
          `intake: ${cpuText(intakeCpu)}; CPU per webhook ${cpuPerItem(intakeCpu, load.perSecond)}; ` +
            `${commitsPerFlush.toFixed(2)} commits per WAL flush, ${fmt((wal1.walBytes - wal0.walBytes) / commits)} WAL bytes per commit`,
        );
        const batches = diffBatches(await inboxBatches(intake), batches0);
        log(
          `intake: per inbox batch (the daemon's stablebooks_inbox_batch_* metrics): ${batches.count} batches of ${batches.meanSize.toFixed(1)} webhooks, ` +
            `statement and commit ${batches.storeMs.toFixed(1)} ms, enqueue ${batches.enqueueMs.toFixed(1)} ms (means); ` +
            `${CONNECTIONS} connections / (${load.p50} ms p50 latency) = ${fmt(CONNECTIONS / (load.p50 / 1000))}/s`,
        );
        const latencyHist = await intakeLatency(intake);
        log(`intake: the daemon's own view (stablebooks_webhook_intake_seconds): ${latencyHist}`);

        log(`idle: sampling the intake's RSS every second for up to ${IDLE_SECONDS} s`);
        let rssAt10 = 0;
        let rssIdle = intake.rssBytes() ?? 0;
        let idleSeconds = 0;
        while (idleSeconds < IDLE_SECONDS) {
          await sleep(1000);
          idleSeconds += 1;
          rssIdle = intake.rssBytes() ?? 0;
          if (idleSeconds === 10) rssAt10 = rssIdle;
          if (idleSeconds >= 10 && mb(rssIdle) < TARGETS.rssIdleMb) break;
          if (idleSeconds % 10 === 0) log(`idle ${idleSeconds} s: RSS ${fmt(mb(rssIdle))} MB`);
        }
        const heap = async (name: string) => fmt(mb(await intake.metric(name)));
        log(
          `intake: RSS ${fmt(mb(rssIdle))} MB after ${idleSeconds} s idle (${fmt(mb(rssAt10))} MB at 10 s; V8 heap ${await heap('nodejs_heap_size_used_bytes')} used of ` +
            `${await heap('nodejs_heap_size_total_bytes')} MB, external ${await heap('nodejs_external_memory_bytes')} MB)`,
        );

        const bare = await bareHttpCeiling(dir, runPrefix);
        const ladderPrefix = prepareWebhooks(dir, intake.url, apiKey, apiSecret, SECONDS, 'ladder');
        const ladderUrl = await createDb(postgres.url, 'bench_ladder');
        await runMigrations(ladderUrl);
        const ladderEnv = { DATABASE_URL: ladderUrl, API_KEY: apiKey, API_SECRET: apiSecret };
        const ladderGroups = {
          postgres: () => servers().postgres,
          'wrk (load generator)': () => (wrkPid ? [wrkPid] : []),
        };
        const verifyStep = await ladderStep(dir, 'verify', ladderPrefix, ladderEnv, ladderGroups);
        await checkpoint(admin);
        const storeStep = await ladderStep(dir, 'store', ladderPrefix, ladderEnv, ladderGroups);

        const after = await baselineRun('single-row INSERT again (noise check)', singleInsert);
        const baseline = (before.tps + after.tps) / 2;
        await intake.stop();
        procs.splice(procs.indexOf(intake), 1);

        const ratio = load.perSecond / baseline;
        return {
          rows: [
            `| pgbench single-row INSERT, ${CONNECTIONS} clients (before / after) | ${fmt(before.tps)} / ${fmt(after.tps)} TPS | baseline | |`,
            `| pgbench of one webhook per statement (nonce claim + inbox row, no group commit), ${CONNECTIONS} clients, extended protocol | ${fmt(statementOnly.tps)} TPS | (diagnostic) | |`,
            `| intake: signed checkout webhooks accepted (200, stored, enqueued), ${CONNECTIONS} connections, ${SECONDS} s | ${fmt(load.perSecond)}/s = ${(ratio * 100).toFixed(0)}% of pgbench | >= ${TARGETS.ratioToPgbench * 100}% | ${verdict(ratio >= TARGETS.ratioToPgbench)} |`,
            `| HTTP ceiling (diagnostic): bare fastify answering the same requests 200 without verifying or storing | ${fmt(bare.perSecond)}/s = ${((bare.perSecond / baseline) * 100).toFixed(0)}% of pgbench; intake = ${((load.perSecond / bare.perSecond) * 100).toFixed(0)}% of it | | |`,
            `| ladder (diagnostic): the intake's route answering 200 after verifying / after also storing (no enqueue) | ${fmt(verifyStep.perSecond)}/s / ${fmt(storeStep.perSecond)}/s = ${((verifyStep.perSecond / baseline) * 100).toFixed(0)}% / ${((storeStep.perSecond / baseline) * 100).toFixed(0)}% of pgbench | | |`,
            `| intake latency p50 / p99 (max) | ${load.p50} / ${load.p99} ms (${load.max} ms) | p99 < ${TARGETS.p99Ms} ms | ${verdict(load.p99 < TARGETS.p99Ms)} |`,
            `| intake RSS: start / peak during the run | ${fmt(mb(rssStart))} / ${fmt(mb(peak))} MB | < ${TARGETS.rssDuringMb} MB | ${verdict(mb(peak) < TARGETS.rssDuringMb)} |`,
            `| intake RSS when idle: after ${idleSeconds} s (at 10 s) | ${fmt(mb(rssIdle))} MB (${fmt(mb(rssAt10))} MB) | < ${TARGETS.rssIdleMb} MB | ${verdict(mb(rssIdle) < TARGETS.rssIdleMb)} |`,
          ],
          counters:
            `pgbench single-row INSERT: ${before.perFlush.toFixed(1)} commits per WAL flush, CPU per transaction ${cpuPerItem(before.cpu, before.tps)}. ` +
            `Intake run: ${commitsPerFlush.toFixed(2)} commits per WAL flush; ${cpuText(intakeCpu)}; CPU per accepted webhook ${cpuPerItem(intakeCpu, load.perSecond)}; ` +
            `${fmt(batches.count)} inbox batches of ${batches.meanSize.toFixed(1)} webhooks, statement and commit ${batches.storeMs.toFixed(1)} ms, enqueue ${batches.enqueueMs.toFixed(1)} ms (means). ` +
            `Ladder, up to verify: ${cpuText(verifyStep.cpu)}; CPU per webhook ${cpuPerItem(verifyStep.cpu, verifyStep.perSecond)}. ` +
            `Up to store: ${cpuText(storeStep.cpu)}; CPU per webhook ${cpuPerItem(storeStep.cpu, storeStep.perSecond)}.`,
        };
      })()
    : undefined;

  const e2ePhase = PHASES.has('e2e')
    ? await (async () => {
        // 3. End to end.
        const e2eUrl = await createDb(postgres.url, 'bench_e2e');
        await runMigrations(e2eUrl);
        const e2eEnv = envFor(e2eUrl, 'bench-e2e', 'e2e');
        const intake2 = await start('intake-e2e', 'intake', e2eEnv, intakePort);
        const e2e: Database = createDatabase(e2eUrl, { max: 2 });
        cleanups.push(() => e2e.close());
        log(
          `end to end: paying ${fmt(PAYMENTS)} intents in the sandbox, ${PAY_CONCURRENCY} at a time (webhooks to the intake, no worker yet)`,
        );
        const payStart = performance.now();
        await payIntents(PAYMENTS, 'order');
        const paySeconds = (performance.now() - payStart) / 1000;
        const stored = async () =>
          Number(
            (await e2e.db.execute<{ n: string }>(sql`select count(*) as n from webhook_inbox`)).rows[0]?.n,
          );
        while ((await stored()) < PAYMENTS) await sleep(200);
        log(
          `end to end: ${fmt(PAYMENTS)} paid and stored in ${paySeconds.toFixed(1)} s (${fmt(PAYMENTS / paySeconds)}/s, the sandbox's pace on anvil)`,
        );

        await admin.query('select pg_stat_statements_reset()');
        await e2e.db.execute(sql`select pg_stat_reset()`);
        log(`end to end: starting ${WORKERS} worker process(es)`);
        const workerStart = performance.now();
        const workers = await Promise.all(
          Array.from({ length: WORKERS }, (_, i) => start(`worker-${i + 1}`, 'worker', e2eEnv)),
        );
        const processed = async () =>
          Number(
            (
              await e2e.db.execute<{ n: string }>(
                sql`select count(*) as n from webhook_inbox where status <> 'received'`,
              )
            ).rows[0]?.n,
          );
        const drainGroups = {
          workers: () => workers.map((w) => w.pid),
          postgres: () => servers().postgres,
          redis: () => servers().redis,
        };
        const { cpu: drainCpu } = await cpuOver(drainGroups, async () => {
          const deadline = Date.now() + 600_000;
          while ((await processed()) < PAYMENTS) {
            if (Date.now() > deadline) throw new Error('the workers did not drain the inbox in 10 minutes');
            await sleep(100);
          }
        });
        const wallSeconds = (performance.now() - workerStart) / 1000;
        const { rows: span } = await e2e.db.execute<{
          first: string;
          last: string;
          processed: string;
          failed: string;
          entries: string;
          dup: string;
        }>(sql`
        select extract(epoch from min(processed_at))::text as first, extract(epoch from max(processed_at))::text as last,
          (count(*) filter (where status = 'processed'))::text as processed,
          (count(*) filter (where status = 'failed'))::text as failed,
          (select count(*) from ledger_entries where kind = 'checkout.confirmed')::text as entries,
          (select count(*) from (select ref_id from ledger_entries group by ref_id, kind having count(*) > 1) d)::text as dup
        from webhook_inbox`);
        const s = span[0]!;
        const drainSeconds = Number(s.last) - Number(s.first);
        const entries = Number(s.entries);
        const e2ePerSecond = (PAYMENTS - 1) / Math.max(0.001, drainSeconds);
        log(
          `end to end: ${fmt(entries)} checkout.confirmed entries, ${s.processed} processed, ${s.failed} failed, ${s.dup} duplicated refs; ` +
            `first to last processed ${drainSeconds.toFixed(2)} s = ${fmt(e2ePerSecond)} payments/s (${wallSeconds.toFixed(1)} s from starting the workers)`,
        );
        log(`end to end: ${cpuText(drainCpu)}; CPU per payment ${cpuPerItem(drainCpu, e2ePerSecond)}`);
        const anatomy = await workerAnatomy(workers);
        const perPayment =
          (((drainCpu.cores.workers ?? 0) + (drainCpu.cores.postgres ?? 0)) / Math.max(1e-9, e2ePerSecond)) *
          1000;
        const statements = await statementsPerPayment(admin, 'bench_e2e', PAYMENTS);
        log(`end to end: per job (worker metrics): ${anatomy}`);
        await Promise.all([intake2, ...workers].map((p) => p.stop()));
        procs.length = 0;
        // After the stop: a backend reports its table counters when it exits, if not before.
        const scans = await sequentialScans(e2e, PAYMENTS);

        return {
          rows: [
            `| end to end: ${fmt(PAYMENTS)} stored webhooks of paid sandbox intents drained by ${WORKERS} worker process(es) (fetch intent, facts, rule-1 entry) | ${fmt(e2ePerSecond)} payments/s | >= ${TARGETS.endToEndPerSecond}/s | ${verdict(e2ePerSecond >= TARGETS.endToEndPerSecond)} |`,
            `| end to end: CPU per payment, worker + PostgreSQL | ${perPayment.toFixed(2)} ms | <= ${TARGETS.cpuPerPaymentMs} ms | ${verdict(perPayment <= TARGETS.cpuPerPaymentMs)} |`,
          ],
          counters: `Drain: ${cpuText(drainCpu)}; CPU per payment ${cpuPerItem(drainCpu, e2ePerSecond)}; per job ${anatomy}. Statements per payment (pg_stat_statements): ${statements}. Sequential scans: ${scans}`,
        };
      })()
    : undefined;

  const latency = PHASES.has('latency') ? await latencyPhase() : undefined;

  // Report.
  const date = new Date().toISOString().slice(0, 10);
  const cpuModel = os.cpus()[0]?.model?.trim() ?? '?';
  const phases = [intakePhase, e2ePhase, latency].filter((p) => p !== undefined);
  const lines = [
    '## Webhook intake and end-to-end posting',
    '',
    `Command: \`BENCH_SECONDS=${SECONDS} BENCH_PAYMENTS=${PAYMENTS} BENCH_WORKERS=${WORKERS} BENCH_PHASES=${[...PHASES].join(',')} npm run bench:intake\` (bench/intake.ts: durable PostgreSQL ${pgVersion}, Redis ${redisVersion}, ` +
      `the daemon as \`stablebooks start --role intake|worker\` processes, wrk sending webhooks signed beforehand).`,
    `Machine: ${os.cpus().length} x ${cpuModel}, ${fmt(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.type()} ${os.release()} (${date}).`,
    '',
    '| what | figure | target | |',
    '| --- | --- | --- | --- |',
    ...phases.flatMap((p) => p.rows),
    '',
    `Counters. ${phases.map((p) => p.counters).join(' ')}`,
  ];
  console.log(`\n${lines.join('\n')}\n`);
}

interface BatchCounters {
  count: number;
  webhooks: number;
  storeSeconds: number;
  enqueueSeconds: number;
  enqueues: number;
}

/** The intake's inbox batch counters (stablebooks_inbox_batch_*), to diff around a run. */
async function inboxBatches(proc: DaemonProcess): Promise<BatchCounters> {
  return {
    count: await proc.metric('stablebooks_inbox_batch_webhooks_count'),
    webhooks: await proc.metric('stablebooks_inbox_batch_webhooks_sum'),
    storeSeconds: await proc.metric('stablebooks_inbox_batch_seconds_sum', { step: 'store' }),
    enqueueSeconds: await proc.metric('stablebooks_inbox_batch_seconds_sum', { step: 'enqueue' }),
    enqueues: await proc.metric('stablebooks_inbox_batch_seconds_count', { step: 'enqueue' }),
  };
}

function diffBatches(after: BatchCounters, before: BatchCounters) {
  const count = after.count - before.count;
  const enqueues = after.enqueues - before.enqueues;
  return {
    count,
    meanSize: (after.webhooks - before.webhooks) / Math.max(1, count),
    storeMs: ((after.storeSeconds - before.storeSeconds) / Math.max(1, count)) * 1000,
    enqueueMs: ((after.enqueueSeconds - before.enqueueSeconds) / Math.max(1, enqueues)) * 1000,
  };
}

/** The daemon's histogram of intake time, as p50/p99 bucket bounds. */
async function intakeLatency(proc: DaemonProcess): Promise<string> {
  const text = await (await fetch(`${proc.opsUrl}/metrics`)).text();
  const buckets: Array<[number, number]> = [];
  for (const m of text.matchAll(
    /^stablebooks_webhook_intake_seconds_bucket\{le="([^"]+)",endpoint="checkout"\} (\d+)/gm,
  )) {
    buckets.push([m[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[1]), Number(m[2])]);
  }
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return 'no samples';
  const q = (p: number) => buckets.find(([, c]) => c >= p * total)?.[0] ?? Number.POSITIVE_INFINITY;
  return `p50 <= ${q(0.5) * 1000} ms, p99 <= ${q(0.99) * 1000} ms over ${fmt(total)} requests`;
}

/**
 * What PostgreSQL did per payment in one database since the last reset (pg_stat_statements): the
 * statements per payment in all, and the costliest ones with calls, time and rows per payment.
 */
async function statementsPerPayment(admin: pg.Pool, database: string, payments: number): Promise<string> {
  const { rows } = await admin.query<{ query: string; calls: string; ms: number; rows: string }>(
    `select query, calls::text, total_exec_time as ms, rows::text from pg_stat_statements
     where dbid = (select oid from pg_database where datname = $1) order by total_exec_time desc`,
    [database],
  );
  const calls = rows.reduce((a, r) => a + Number(r.calls), 0);
  const ms = rows.reduce((a, r) => a + r.ms, 0);
  const top = rows.slice(0, 30).map((r) => {
    const text = r.query.replace(/\s+/g, ' ').slice(0, 160);
    return `${(Number(r.calls) / payments).toFixed(2)} calls, ${(r.ms / payments).toFixed(3)} ms, ${(Number(r.rows) / payments).toFixed(2)} rows: \`${text}\``;
  });
  log(`end to end: pg_stat_statements per payment, the costliest first:\n  ${top.join('\n  ')}`);
  return `${(calls / payments).toFixed(1)} statements, ${(ms / payments).toFixed(3)} ms executing; the costliest: ${top.slice(0, 5).join('; ')}`;
}

/**
 * The tables PostgreSQL read whole during the drain, with the rows each scan read per payment: a
 * plan that scans a table growing with the books costs more with every payment (a plan chosen on
 * statistics taken while the table was small).
 */
async function sequentialScans(database: Database, payments: number): Promise<string> {
  const { rows } = await database.db.execute<{ relname: string; seq_scan: string; seq_tup_read: string }>(
    sql`select relname, seq_scan::text, seq_tup_read::text from pg_stat_user_tables
        where seq_scan > 0 order by seq_tup_read desc`,
  );
  const text = rows.map(
    (r) =>
      `${r.relname} ${(Number(r.seq_scan) / payments).toFixed(2)} scans and ${(Number(r.seq_tup_read) / payments).toFixed(1)} rows per payment`,
  );
  log(`end to end: sequential scans during the drain: ${text.join('; ') || 'none'}`);
  return text.join('; ') || 'none';
}

/** Mean job time and mean API call time of the workers, from their /metrics. */
async function workerAnatomy(workers: DaemonProcess[]): Promise<string> {
  let jobSum = 0;
  let jobCount = 0;
  let apiSum = 0;
  let apiCount = 0;
  for (const w of workers) {
    jobSum += await w.metric('stablebooks_job_duration_seconds_sum', { queue: 'webhooks' });
    jobCount += await w.metric('stablebooks_job_duration_seconds_count', { queue: 'webhooks' });
    apiSum += await w.metric('stablebooks_api_request_duration_seconds_sum');
    apiCount += await w.metric('stablebooks_api_request_duration_seconds_count');
  }
  return (
    `${fmt(jobCount)} jobs, mean ${((jobSum / Math.max(1, jobCount)) * 1000).toFixed(1)} ms in the processor ` +
    `(of which GET intent ${((apiSum / Math.max(1, apiCount)) * 1000).toFixed(1)} ms mean over ${fmt(apiCount)} calls)`
  );
}

/** One RESP command over a raw socket (no client library needed for two figures): the raw reply. */
function redisCommand(url: string, args: string[]): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: u.hostname, port: Number(u.port) });
    let data = '';
    const complete = () => {
      if (/^[:+-].*\r\n$/s.test(data)) return true;
      const bulk = /^\$(\d+)\r\n/.exec(data);
      return bulk?.[1] !== undefined && Buffer.byteLength(data) >= bulk[0].length + Number(bulk[1]) + 2;
    };
    socket.on('connect', () =>
      socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`),
    );
    socket.on('data', (c) => {
      data += c.toString();
      if (complete()) {
        socket.destroy();
        resolve(data);
      }
    });
    socket.on('error', reject);
    socket.setTimeout(5000, () => {
      socket.destroy();
      resolve(data);
    });
  });
}

const redisInfo = (url: string) => redisCommand(url, ['INFO', 'server']);
async function redisKeys(url: string): Promise<number> {
  return Number(/^:(\d+)/.exec(await redisCommand(url, ['DBSIZE']))?.[1] ?? 0);
}

await runBench(run);
