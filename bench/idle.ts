/**
 * Idle cost benchmark (issue 33, target 3): what the daemon costs while nothing happens, on a
 * chain that mines a block a second. Run with `npm run bench:idle` (BENCH_SECONDS, default 300,
 * plus about 30 s of start-up).
 *
 * Starts its own PostgreSQL, Redis and anvil (`--block-time 1`), the sandbox on that anvil (the
 * service the store talks to, with the store's wallets and the two tokens), and one real daemon
 * process, `stablebooks start` with every role, configured as a merchant would be: one store with
 * its merchant and custody wallets on one chain, CHAINS_FILE naming the tokens, RPC_URL_<chain>
 * pointing at a counting JSON-RPC proxy in front of anvil. After a warm-up (BENCH_WARMUP_SECONDS,
 * default 60: the first passes, and the sandbox's set-up transfers final and booked), it counts
 * for BENCH_SECONDS:
 * - JSON-RPC calls by method, and HTTP requests (a batch is one request holding several calls);
 * - the daemon process's CPU time (utime + stime of /proc/<pid>/stat) as a share of one core;
 * - its RSS (VmRSS of /proc/<pid>/status), sampled every second: the maximum and the last;
 * - what explains the CPU: Redis commands (INFO commandstats, by command) and PostgreSQL
 *   transactions of the daemon's database (pg_stat_database), per minute; and Redis's keys at the
 *   start and the end (finished jobs it keeps).
 * Nothing is paid and no webhook is sent during the measurement: it is the cost of waiting.
 * No figure is asserted; they are printed with the machine's load for docs/benchmarks.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { runMigrations } from '../src/db/migrate.ts';
import { startAnvil } from '../src/devservices/anvil.ts';
import { freePort } from '../src/devservices/freePort.ts';
import { startEphemeralPostgres } from '../src/devservices/postgres.ts';
import { startEphemeralRedis } from '../src/devservices/redis.ts';
import { runSandbox } from '../src/sandbox/runSandbox.ts';
import { sandboxConfigSchema } from '../src/sandbox/sandboxConfig.ts';
import { type DaemonProcess, daemonEnv, startDaemonProcess } from '../test/helpers/daemonProcess.ts';
import { type Cleanups, fmt, log, positiveNumber, runBench, sleep } from './benchKit.ts';

const SECONDS = positiveNumber('BENCH_SECONDS', 300);
const WARMUP_SECONDS = positiveNumber('BENCH_WARMUP_SECONDS', 60);
/** Base: no finalized tag, finality 30 blocks below the head (the registry's default shape). */
const CHAIN_ID = Math.round(positiveNumber('BENCH_CHAIN', 8453));
const CLOCK_TICKS = 100; // USER_HZ on Linux
/**
 * CHAINS_FILE block_time_ms for the chain (anvil's real 1,000 by default); `registry` leaves it
 * out (the registry's own, 2,000 for Base; and the only way to run this bench on a daemon from
 * before the setting existed).
 */
const BLOCK_TIME_MS =
  process.env.BENCH_BLOCK_TIME_MS === 'registry' ? undefined : positiveNumber('BENCH_BLOCK_TIME_MS', 1000);

interface RpcCount {
  http: number;
  calls: Map<string, number>;
}

/**
 * A JSON-RPC proxy that forwards every request to `target` unchanged and counts it: one HTTP
 * request, and one call per item of a batch, by method.
 */
async function startCountingProxy(
  target: string,
): Promise<{ url: string; count: RpcCount; close(): Promise<void> }> {
  const count: RpcCount = { http: 0, calls: new Map() };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      count.http++;
      try {
        const parsed = JSON.parse(body.toString('utf8')) as { method?: string } | Array<{ method?: string }>;
        for (const item of Array.isArray(parsed) ? parsed : [parsed]) {
          const method = item.method ?? 'unknown';
          count.calls.set(method, (count.calls.get(method) ?? 0) + 1);
        }
      } catch {
        count.calls.set('(unparseable)', (count.calls.get('(unparseable)') ?? 0) + 1);
      }
      fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        .then(async (answer) => {
          res.writeHead(answer.status, { 'content-type': 'application/json' });
          res.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch((err: unknown) => {
          res.writeHead(502);
          res.end(String(err));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** utime + stime of a process, in clock ticks (0 once it has exited). */
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** Calls per command from Redis's INFO commandstats (`cmdstat_get:calls=3,...`). */
function redisCommands(info: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

function snapshot(count: RpcCount): { http: number; calls: Map<string, number> } {
  return { http: count.http, calls: new Map(count.calls) };
}

async function run(cleanups: Cleanups): Promise<void> {
  const dir = mkdtempSync(join(os.tmpdir(), 'stablebooks-bench-idle-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const load = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  log(
    `machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? '?'}, ${fmt(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, load ${load()}`,
  );

  log('starting PostgreSQL, Redis and anvil (a block a second)');
  const [postgres, redis, anvil] = await Promise.all([
    startEphemeralPostgres({ durable: true }),
    startEphemeralRedis(),
    startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: 1 }),
  ]);
  cleanups.push(
    () => postgres.stop(),
    () => redis.stop(),
    () => anvil.stop(),
  );
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('create database bench_idle');
  await admin.end();
  const databaseUrl = Object.assign(new URL(postgres.url), { pathname: '/bench_idle' }).toString();
  await runMigrations(databaseUrl);

  const apiKey = `pk_bench_${randomBytes(4).toString('hex')}`;
  const apiSecret = `sk_bench_${randomBytes(16).toString('hex')}`;
  log('starting the sandbox on that anvil (it deploys USDT and USDC)');
  const sandbox = await runSandbox({
    config: sandboxConfigSchema.parse({
      businesses: [
        {
          business_id: 'biz_1',
          stores: [
            { store_id: 'st_a', api_key: apiKey, api_secret: apiSecret, accepted_stable_coins: [1, 2] },
          ],
        },
      ],
    }),
    host: '127.0.0.1',
    port: 0,
    chains: [CHAIN_ID],
    rpcUrls: new Map([[CHAIN_ID, anvil.rpcUrl]]),
    seed: 'bench-idle',
  });
  cleanups.push(() => sandbox.stop());
  const chain = [...sandbox.world.chains.values()][0]!;

  const merchant = await chain.wallet('merchant:st_a');
  const proxy = await startCountingProxy(anvil.rpcUrl);
  cleanups.push(() => proxy.close());
  const env = daemonEnv({
    dir,
    databaseUrl,
    redisUrl: redis.url,
    svcBaseUrl: sandbox.url,
    stores: [
      {
        storeId: 'st_a',
        businessId: 'biz_1',
        apiKey,
        apiSecret,
        wallets: {
          [CHAIN_ID]: {
            merchant,
            custody: await chain.wallet('custody:biz_1'),
          },
        },
      },
    ],
    chains: [
      {
        chainId: CHAIN_ID,
        rpcUrl: proxy.url,
        tokens: { USDT: chain.tokens.USDT.address, USDC: chain.tokens.USDC.address },
        decimals: chain.decimals,
        // What the merchant's CHAINS_FILE says of this chain: a block a second, as anvil mines.
        ...(BLOCK_TIME_MS === undefined ? {} : { blockTimeMs: BLOCK_TIME_MS }),
      },
    ],
    queuePrefix: `bench-idle-${randomBytes(3).toString('hex')}`,
    logLevel: 'info',
  });
  log('starting the daemon: stablebooks start (every role)');
  const daemon: DaemonProcess = await startDaemonProcess({
    label: 'daemon',
    roles: 'all',
    env,
    port: await freePort(),
    logDir: dir,
    // BENCH_CPU_PROF=<dir>: the daemon writes a V8 CPU profile there when it stops.
    nodeFlags: process.env.BENCH_CPU_PROF
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
      : [],
  });
  cleanups.push(() => daemon.stop());

  // Past one finality window (30 blocks): the sandbox's own set-up transfers (the custody
  // wallet's funding) are final and booked before the counting starts, so what is counted is waiting.
  log(`warm-up: ${WARMUP_SECONDS} s (the first passes, and booking the sandbox's set-up transfers)`);
  await sleep(WARMUP_SECONDS * 1000);

  const redisStats = new Redis(redis.url, { lazyConnect: true });
  await redisStats.connect();
  cleanups.push(async () => redisStats.disconnect());
  const pgStats = new pg.Client({ connectionString: databaseUrl });
  await pgStats.connect();
  cleanups.push(() => pgStats.end());
  const transactions = async () =>
    Number(
      (
        await pgStats.query<{ n: string }>(
          'select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()',
        )
      ).rows[0]?.n ?? 0,
    );

  log(`measuring for ${SECONDS} s, load ${load()}`);
  const redis0 = redisCommands(await redisStats.info('commandstats'));
  const keys0 = await redisStats.dbsize();
  const pg0 = await transactions();
  const rpc0 = snapshot(proxy.count);
  const cpu0 = cpuTicks(daemon.pid);
  const t0 = performance.now();
  let maxRss = daemon.rssBytes() ?? 0;
  let lastRss = maxRss;
  const endAt = t0 + SECONDS * 1000;
  let nextReport = t0 + 60_000;
  let minuteMaxRss = 0;
  while (performance.now() < endAt) {
    await sleep(Math.min(1000, Math.max(0, endAt - performance.now())));
    const rss = daemon.rssBytes();
    if (rss === null) throw new Error(`the daemon exited; its log: ${daemon.logFile}`);
    lastRss = rss;
    if (rss > maxRss) maxRss = rss;
    if (rss > minuteMaxRss) minuteMaxRss = rss;
    if (performance.now() >= nextReport) {
      nextReport += 60_000;
      const minutes = (performance.now() - t0) / 60_000;
      const calls =
        [...proxy.count.calls.values()].reduce((a, b) => a + b, 0) -
        [...rpc0.calls.values()].reduce((a, b) => a + b, 0);
      log(
        `${fmt(minutes, 1)} min: ${fmt(calls / minutes, 1)} calls/min, CPU ${fmt(((cpuTicks(daemon.pid) - cpu0) / CLOCK_TICKS / ((performance.now() - t0) / 1000)) * 100, 2)}%, RSS ${fmt(rss / 2 ** 20)} MB (this minute's highest ${fmt(minuteMaxRss / 2 ** 20)} MB)`,
      );
      minuteMaxRss = 0;
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpuSeconds = (cpuTicks(daemon.pid) - cpu0) / CLOCK_TICKS;
  // Our own two statistics queries (one each side) are not the daemon's.
  const pgTransactions = (await transactions()) - pg0 - 2;
  const redis1 = redisCommands(await redisStats.info('commandstats'));
  const keys1 = await redisStats.dbsize();
  const minutes = seconds / 60;
  const methods = [...proxy.count.calls.keys()].sort();
  const rows = methods
    .map((m) => ({ method: m, n: (proxy.count.calls.get(m) ?? 0) - (rpc0.calls.get(m) ?? 0) }))
    .filter((r) => r.n > 0);
  const totalCalls = rows.reduce((a, r) => a + r.n, 0);
  const httpRequests = proxy.count.http - rpc0.http;

  console.log('');
  console.log(`Idle cost over ${fmt(seconds)} s, chain ${CHAIN_ID} at a block a second (load ${load()})`);
  console.log('');
  console.log('| JSON-RPC method | calls | per minute |');
  console.log('| --- | ---: | ---: |');
  for (const r of rows) console.log(`| ${r.method} | ${r.n} | ${fmt(r.n / minutes, 1)} |`);
  console.log(`| **all calls** | ${totalCalls} | ${fmt(totalCalls / minutes, 1)} |`);
  console.log(`| HTTP requests (a batch is one) | ${httpRequests} | ${fmt(httpRequests / minutes, 1)} |`);
  console.log('');
  console.log(
    `daemon CPU: ${fmt(cpuSeconds, 2)} s over ${fmt(seconds)} s = ${fmt((cpuSeconds / seconds) * 100, 2)}% of one core`,
  );
  console.log(`daemon RSS: max ${fmt(maxRss / 2 ** 20)} MB, at the end ${fmt(lastRss / 2 ** 20)} MB`);
  const redisRows = [...redis1]
    .map(([command, n]) => ({ command, n: n - (redis0.get(command) ?? 0) - (command === 'info' ? 1 : 0) }))
    .filter((r) => r.n > 0)
    .sort((a, b) => b.n - a.n);
  const redisTotal = redisRows.reduce((a, r) => a + r.n, 0);
  console.log(
    `Redis: ${fmt(redisTotal / minutes, 1)} commands/min (${redisRows
      .slice(0, 16)
      .map((r) => `${r.command} ${fmt(r.n / minutes, 1)}`)
      .join(', ')})`,
  );
  console.log(
    `Redis keys: ${keys0} at the start, ${keys1} at the end (the schedulers' jobs and the finished runs kept)`,
  );
  console.log(`PostgreSQL: ${fmt(pgTransactions / minutes, 1)} transactions/min in the daemon's database`);

  // After the counting, so that it does not count: one transfer into the merchant wallet, and the
  // time until a pass has read it as final (the pass that reads a payment final proves it).
  log('latency probe: 1 USDC minted to the merchant wallet; waiting for a pass to read it final');
  const sent = performance.now();
  const mined = await chain.mint('USDC', merchant, 1_000_000n);
  const pg1 = new pg.Client({ connectionString: databaseUrl });
  await pg1.connect();
  let finalAfter = Number.NaN;
  try {
    const deadline = sent + 5 * 60_000;
    while (performance.now() < deadline) {
      const { rows } = await pg1.query<{ state: string }>(
        'select state from chain_transfers where tx_hash = $1',
        [mined.txHash.toLowerCase()],
      );
      if (rows[0]?.state === 'final') {
        finalAfter = (performance.now() - sent) / 1000;
        break;
      }
      await sleep(200);
    }
  } finally {
    await pg1.end();
  }
  console.log(
    `latency: a transfer mined in block ${mined.blockNumber} was read final ${fmt(finalAfter, 1)} s after it was sent (its finality window, then the next pass)`,
  );
  console.log(`machine: nproc ${os.cpus().length}, load at the end ${load()}`);
}

await runBench(run);
