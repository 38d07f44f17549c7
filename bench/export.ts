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
 * 3. Valuation (issue 34), unless BENCH_VALUE is `none`: a daily rate of USDT in BENCH_VALUE
 *    (default EUR) for every UTC day from the first entry's to today's (the closing day), imported
 *    by `stablebooks rates import FILE.csv` in a child process (the import's own path; idempotent,
 *    so a BENCH_REUSE run imports nothing new); then each format of BENCH_VALUE_FORMATS (default
 *    hledger,csv: those --value serves) exported again with `--value EUR`, measured as in 2, and
 *    `stablebooks ledger balances --value EUR --json` (valueLedger over every posting). Reports the
 *    valued export's time and CPU as a ratio to the same format's plain export of the same run.
 *
 * Environment: BENCH_ENTRIES (default 1000000), BENCH_CHUNK (default 100000), BENCH_FORMATS,
 * BENCH_FROM (an ISO time: export from it, with opening balances; default: every entry),
 * BENCH_VALUE, BENCH_VALUE_FORMATS, DATABASE_URL, BENCH_REUSE=1 (DATABASE_URL holds a fill
 * already: skip it). Nothing is asserted.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
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
const VALUE = process.env.BENCH_VALUE ?? 'EUR';
const VALUE_FORMATS = (process.env.BENCH_VALUE_FORMATS ?? 'hledger,csv')
  .split(',')
  .map((f) => f.trim())
  .filter((f) => f && FORMATS.includes(f));
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

type ChildResult = ExportChildReport & { sampled: number };

/** One `stablebooks` command in a child process (exportChild.ts), its VmRSS sampled every 50 ms. */
function runChild(url: string, args: string[], cleanups: Cleanups): Promise<ChildResult> {
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

  const entries = Number(size[0]?.entries);
  const results: Array<{ format: string; value: string | null } & ChildResult> = [];
  const exportOnce = async (format: string, value: string | null) => {
    const args = [
      'export',
      '--format',
      format,
      '--out',
      '/dev/null',
      ...(FROM ? ['--from', FROM] : []),
      ...(value ? ['--value', value] : []),
    ];
    log(`${args.join(' ')} (child process)`);
    const r = await runChild(url, args, cleanups);
    if (r.exitCode !== 0) throw new Error(`${args.join(' ')} exited ${r.exitCode}: ${r.stderr}`);
    log(
      `  ${format}${value ? ` --value ${value}` : ''}: ${(r.wallMs / 1000).toFixed(1)} s, CPU ${(r.cpuMs / 1000).toFixed(1)} s, maxRSS ${mb(r.maxRss)}, sampled ${mb(r.sampled)}; ${r.stderr.trim()}`,
    );
    results.push({ format, value, ...r });
  };
  for (const format of FORMATS) await exportOnce(format, null);

  let balances: ChildResult | null = null;
  if (VALUE !== 'none') {
    await importDailyRates(db, url, cleanups);
    for (const format of VALUE_FORMATS) await exportOnce(format, VALUE);
    const args = ['ledger', 'balances', '--value', VALUE, '--json'];
    log(`${args.join(' ')} (child process)`);
    balances = await runChild(url, args, cleanups);
    if (balances.exitCode !== 0)
      throw new Error(`${args.join(' ')} exited ${balances.exitCode}: ${balances.stderr}`);
    log(
      `  ledger balances --value ${VALUE}: ${(balances.wallMs / 1000).toFixed(1)} s, CPU ${(balances.cpuMs / 1000).toFixed(1)} s, maxRSS ${mb(balances.maxRss)}, sampled ${mb(balances.sampled)}`,
    );
  }

  console.log(`\n## Export of ${fmt(entries)} entries to /dev/null\n`);
  console.log(
    '| format | --value | seconds | entries/s | CPU s | peak RSS (maxRSS) | sampled VmRSS | time / plain | CPU / plain |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  );
  for (const r of results) {
    const plain = results.find((p) => p.format === r.format && p.value === null);
    const ratio = (x: number, y: number | undefined) => (r.value && y ? `${(x / y).toFixed(2)}x` : '');
    console.log(
      `| ${r.format} | ${r.value ?? '-'} | ${(r.wallMs / 1000).toFixed(1)} | ${fmt(entries / (r.wallMs / 1000))} | ${(r.cpuMs / 1000).toFixed(1)} | ${mb(r.maxRss)} | ${mb(r.sampled)} | ${ratio(r.wallMs, plain?.wallMs)} | ${ratio(r.cpuMs, plain?.cpuMs)} |`,
    );
  }
  if (balances)
    console.log(
      `\nledger balances --value ${VALUE} over every posting: ${(balances.wallMs / 1000).toFixed(1)} s, CPU ${(balances.cpuMs / 1000).toFixed(1)} s, ${fmt(entries / (balances.wallMs / 1000))} entries/s, peak RSS ${mb(balances.maxRss)} (sampled ${mb(balances.sampled)})`,
    );
  console.log(
    `\n- load average at the end (1/5/15 min): ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')}`,
  );
}

/**
 * A rate of USDT in VALUE for every UTC day of the ledger, up to today's (the closing rate of
 * `ledger balances --value`), through `stablebooks rates import`: the file a merchant would
 * import. The rate is a function of the day (0.9 and four more decimals), so a second run writes
 * the same file and the import changes nothing.
 */
async function importDailyRates(db: Db, url: string, cleanups: Cleanups): Promise<void> {
  const { rows } = await db.execute<{ first: string | null }>(
    sql`select (min(occurred_at) at time zone 'UTC')::date::text as first from ledger_entries`,
  );
  const first = rows[0]?.first;
  if (!first) throw new Error('no entry to value');
  const today = new Date().toISOString().slice(0, 10);
  let csv = 'date,asset,currency,rate\n';
  let days = 0;
  for (
    let d = new Date(`${first}T00:00:00Z`);
    d.toISOString().slice(0, 10) <= today;
    d.setUTCDate(d.getUTCDate() + 1)
  ) {
    const n = Math.round(d.getTime() / 86_400_000);
    csv += `${d.toISOString().slice(0, 10)},USDT,${VALUE},0.9${String((n * 7919) % 10_000).padStart(4, '0')}\n`;
    days++;
  }
  const dir = mkdtempSync(join(os.tmpdir(), 'bench-rates-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'rates.csv');
  writeFileSync(file, csv);
  log(`rates import: ${days} daily USDT rates in ${VALUE}, ${first} to ${today} (child process)`);
  const r = await runChild(url, ['rates', 'import', file], cleanups);
  if (r.exitCode !== 0) throw new Error(`rates import exited ${r.exitCode}: ${r.stderr}`);
  log(`  rates import: ${(r.wallMs / 1000).toFixed(1)} s; ${r.stderr.trim()}`);
}

process.once('SIGTERM', () => process.kill(process.pid, 'SIGINT'));
runBench(run).catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
