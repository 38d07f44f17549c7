/**
 * Export benchmark: `stablebooks export` of a ledger of BENCH_ENTRIES entries (default 1,000,000)
 * to /dev/null, per format: wall time and peak RSS, to show the export streams in bounded memory.
 * Run with `npm run bench:export`.
 *
 * 1. Fill. Starts its own durable PostgreSQL (as bench/ledger.ts does) or uses DATABASE_URL (a
 *    scratch database: the rows stay), runs the migrations, creates the accounts of store
 *    `st_bench` for USDT on Ethereum (6 decimals) and on BNB (18 decimals) through ensureAccounts,
 *    then loads the entries set-based, BENCH_CHUNK per transaction (one INSERT ... SELECT
 *    generate_series of entries and one of their postings, with the ledger's triggers on, as
 *    bench/ledger.ts's bulk load): a quarter each of checkout.confirmed (3 postings),
 *    chain.payment_proven (2, with a tx_hash), claim_link.funded (2) and
 *    chain.transfer_in_unmatched (2), alternating the two tokens, one every 30 s over the year
 *    before now; 18-decimal amounts are far above 2^53 base units. Then VACUUM (ANALYZE).
 * 2. Export. For each format of BENCH_FORMATS (default hledger,beancount,ledger,csv), a child Node
 *    process (bench/exportChild.ts, the CLI's own main() under tsx, as bin/stablebooks.js runs it)
 *    runs `stablebooks export --format F --out /dev/null` over every entry, and reports its wall
 *    time and `process.resourceUsage().maxRSS`; the parent also samples the child's VmRSS every
 *    50 ms. /dev/null is written directly (not through a temporary file), with backpressure.
 *
 * Environment: BENCH_ENTRIES (default 1000000), BENCH_CHUNK (default 100000), BENCH_FORMATS,
 * BENCH_FROM (an ISO time: export from it, with opening balances; default: every entry),
 * DATABASE_URL, BENCH_REUSE=1 (DATABASE_URL holds a fill already: skip it). Nothing is asserted.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { createDatabase, type Db } from '../src/db/database.ts';
import { runMigrations } from '../src/db/migrate.ts';
import { startEphemeralPostgres } from '../src/devservices/postgres.ts';
import { type AccountKind, account, accountCode, type Token } from '../src/ledger/accounts.ts';
import { ensureAccounts } from '../src/ledger/ensureAccounts.ts';
import { type Cleanups, fmt, log, positiveNumber, runBench, sleep } from './benchKit.ts';
import type { ExportChildReport } from './exportChild.ts';

const ENTRIES = positiveNumber('BENCH_ENTRIES', 1_000_000);
const CHUNK = positiveNumber('BENCH_CHUNK', 100_000);
const FORMATS = (process.env.BENCH_FORMATS ?? 'hledger,beancount,ledger,csv')
  .split(',')
  .map((f) => f.trim())
  .filter(Boolean);
const FROM = process.env.BENCH_FROM;
const REUSE = process.env.BENCH_REUSE === '1';
const STORE_ID = 'st_bench';

const TOKENS: Token[] = [
  { chainId: 1, address: '0xdac17f958d2ee523a2206206994597c13d831ec7', symbol: 'USDT', decimals: 6 },
  { chainId: 56, address: '0x55d398326f99059ff775485246999027b3197955', symbol: 'USDT', decimals: 18 },
];
const KINDS = [
  'checkout.confirmed',
  'chain.payment_proven',
  'claim_link.funded',
  'chain.transfer_in_unmatched',
];
const REF_TYPES = ['checkout_intent', 'checkout_intent', 'claim_link', 'chain_transfer'];
/** Per kind (g % 4): the account, the sign, and the part of the amount (N, F or N + F). */
const LINES: Array<[number, AccountKind, 1 | -1, 'N' | 'F' | 'T']> = [
  [0, 'assets:in_transit', 1, 'N'],
  [0, 'expense:service_fees', 1, 'F'],
  [0, 'income:sales', -1, 'T'],
  [1, 'assets:wallet', 1, 'N'],
  [1, 'assets:in_transit', -1, 'N'],
  [2, 'assets:claim_pool', 1, 'N'],
  [2, 'assets:custody', -1, 'N'],
  [3, 'assets:wallet', 1, 'N'],
  [3, 'assets:suspense', -1, 'N'],
];

const mb = (bytes: number) => `${fmt(bytes / 2 ** 20, 1)} MB`;

async function fill(db: Db): Promise<{ seconds: number; postings: number }> {
  const refs = TOKENS.flatMap((token) => LINES.map(([, kind]) => account(kind, STORE_ID, token)));
  const resolved = await ensureAccounts(db, refs);
  // (kind mod, token index, account id, asset, sign, part, unit): unit = a cent of the token.
  const values = TOKENS.flatMap((token, t) =>
    LINES.map(([mod, kind, sign, part]) => {
      const a = resolved.get(accountCode(account(kind, STORE_ID, token)));
      if (!a) throw new Error(`account ${kind} was not created`);
      const unit = (10n ** BigInt(token.decimals - 2)).toString();
      return sql`(${mod}::int, ${t}::int, ${a.id.toString()}::bigint, ${a.asset}::text, ${sign}::int, ${part}::text, ${unit}::numeric)`;
    }),
  );
  const lines = sql.join(values, sql`, `);
  const start = new Date(Date.now() - ENTRIES * 30_000).toISOString();
  const t0 = performance.now();
  for (let lo = 1; lo <= ENTRIES; lo += CHUNK) {
    const hi = Math.min(ENTRIES, lo + CHUNK - 1);
    const c0 = performance.now();
    await db.transaction(async (tx) => {
      const { rows: range } = await tx.execute<{ lo: string; hi: string }>(sql`
        with inserted as (
        insert into ledger_entries
          (idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, metadata, content_hash)
        select 'bench:export:' || g,
               (${sql.raw(`array[${KINDS.map((k) => `'${k}'`).join(',')}]`)})[g % 4 + 1],
               ${start}::timestamptz + make_interval(secs => g * 30),
               ${STORE_ID},
               (${sql.raw(`array[${REF_TYPES.map((k) => `'${k}'`).join(',')}]`)})[g % 4 + 1],
               'ref-' || g,
               case when g % 4 = 1 then jsonb_build_object('tx_hash', '0x' || md5(g::text) || md5((g + 1)::text))
                    else '{}'::jsonb end,
               md5(g::text)
        from generate_series(${lo}::bigint, ${hi}::bigint) g
        returning id)
        select min(id)::text as lo, max(id)::text as hi from inserted`);
      const ids = range[0];
      if (!ids) throw new Error('the entries insert returned no id range');
      await tx.execute(sql`
        with e as (
          select id, occurred_at, substring(ref_id from 5)::bigint as g
          from ledger_entries
          where id between ${ids.lo}::bigint and ${ids.hi}::bigint and tx_id = pg_current_xact_id()
        ), l(mod, tok, account_id, asset, sign, part, unit) as (values ${lines})
        insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at)
        select e.id, l.account_id, l.asset,
               l.sign * case l.part when 'N' then (e.g % 100000 + 1) * l.unit
                                    when 'F' then (e.g % 100 + 1) * l.unit
                                    else (e.g % 100000 + 1) * l.unit + (e.g % 100 + 1) * l.unit end,
               e.occurred_at
        from e join l on l.mod = e.g % 4 and l.tok = (e.g / 4) % 2`);
    });
    const rate = hi / ((performance.now() - t0) / 1000);
    log(
      `  fill: ${fmt(hi)}/${fmt(ENTRIES)} entries (chunk ${((performance.now() - c0) / 1000).toFixed(1)} s, ${fmt(rate)} entries/s)`,
    );
  }
  const { rows } = await db.execute<{ n: string }>(sql`select count(*)::text as n from ledger_postings`);
  return { seconds: (performance.now() - t0) / 1000, postings: Number(rows[0]?.n ?? 0) };
}

/** VmRSS of a process now, in bytes (Linux), or 0. */
function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1] ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function runChild(
  url: string,
  format: string,
  cleanups: Cleanups,
): Promise<ExportChildReport & { sampled: number }> {
  const args = ['export', '--format', format, '--out', '/dev/null', ...(FROM ? ['--from', FROM] : [])];
  const child: ChildProcess = fork(fileURLToPath(new URL('./exportChild.ts', import.meta.url)), args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATABASE_URL: url },
    execArgv: process.execArgv,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let sampled = 0;
  const timer = setInterval(() => {
    if (child.pid !== undefined) sampled = Math.max(sampled, rssOf(child.pid));
  }, 50);
  return new Promise((resolve, reject) => {
    let report: ExportChildReport | undefined;
    child.on('message', (m: unknown) => {
      report = m as ExportChildReport;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearInterval(timer);
      if (report) resolve({ ...report, sampled });
      else reject(new Error(`the export process exited (${signal ?? code}) without a result`));
    });
  });
}

async function run(cleanups: Cleanups): Promise<void> {
  let url = process.env.DATABASE_URL;
  if (url) {
    log('using DATABASE_URL (a scratch database: the bench rows stay in it)');
  } else {
    log('starting a durable ephemeral PostgreSQL (fsync, synchronous_commit, full_page_writes on)');
    const server = await startEphemeralPostgres({ durable: true });
    cleanups.push(() => server.stop());
    url = server.url;
  }
  await runMigrations(url);
  const database = createDatabase(url, { max: 2, applicationName: 'stablebooks-bench-fill' });
  cleanups.push(() => Promise.race([database.close(), sleep(1000)]));
  const { db } = database;
  const cpus = os.cpus();
  log(
    `machine: ${cpus.length} x ${cpus[0]?.model.trim() ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}`,
  );
  if (REUSE) {
    log('BENCH_REUSE=1: no fill');
  } else {
    const { rows } = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from ledger_entries where store_id = ${STORE_ID}`,
    );
    if ((rows[0]?.n ?? 0) > 0)
      throw new Error(`the database already holds ${STORE_ID} entries: use an empty one, or BENCH_REUSE=1`);
    const filled = await fill(db);
    log(`fill: ${fmt(ENTRIES)} entries, ${fmt(filled.postings)} postings in ${filled.seconds.toFixed(1)} s`);
    const t0 = performance.now();
    await db.execute(sql`vacuum (analyze)`);
    log(`vacuum (analyze): ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const { rows: size } = await db.execute<{ entries: string; postings: string; bytes: string }>(sql`
    select (select count(*) from ledger_entries)::text as entries, (select count(*) from ledger_postings)::text as postings,
           pg_size_pretty(pg_database_size(current_database())) as bytes`);
  log(
    `database: ${fmt(Number(size[0]?.entries))} entries, ${fmt(Number(size[0]?.postings))} postings, ${size[0]?.bytes}`,
  );
  log(
    `load average (1/5/15 min): ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')}`,
  );

  const results: Array<{ format: string } & ExportChildReport & { sampled: number }> = [];
  for (const format of FORMATS) {
    log(`export --format ${format} --out /dev/null${FROM ? ` --from ${FROM}` : ''} (child process)`);
    const r = await runChild(url, format, cleanups);
    if (r.exitCode !== 0) throw new Error(`export --format ${format} exited ${r.exitCode}: ${r.stderr}`);
    log(
      `  ${format}: ${(r.wallMs / 1000).toFixed(1)} s, maxRSS ${mb(r.maxRss)}, sampled ${mb(r.sampled)}; ${r.stderr.trim()}`,
    );
    results.push({ format, ...r });
  }
  console.log(`\n## Export of ${fmt(Number(size[0]?.entries))} entries to /dev/null\n`);
  console.log(
    '| format | seconds | entries/s | peak RSS (maxRSS) | sampled VmRSS |\n| --- | --- | --- | --- | --- |',
  );
  for (const r of results)
    console.log(
      `| ${r.format} | ${(r.wallMs / 1000).toFixed(1)} | ${fmt(Number(size[0]?.entries) / (r.wallMs / 1000))} | ${mb(r.maxRss)} | ${mb(r.sampled)} |`,
    );
  console.log(
    `\n- load average at the end (1/5/15 min): ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')}`,
  );
}

process.once('SIGTERM', () => process.kill(process.pid, 'SIGINT'));
runBench(run).catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
