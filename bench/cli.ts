/**
 * CLI start-up benchmark: how long `stablebooks` takes to answer, as a whole process, beside
 * `node -e 0` (the machine's floor for any Node.js command) in the same run. Run with
 * `npm run bench:cli`.
 *
 * 1. A database for `ledger balances`: its own ephemeral PostgreSQL (or DATABASE_URL: a scratch
 *    database, the rows stay), migrated, with BENCH_ENTRIES checkout-like entries (default 1,000)
 *    over two stores and two tokens, posted through postEntry.
 * 2. hyperfine (no shell between it and the command, 3 warm-up runs, BENCH_RUNS timed runs each):
 *    `node -e 0`, then `node bin/stablebooks.js --version`, `--help` and `--no-dotenv ledger
 *    balances` (--no-dotenv: a .env in the current folder must not change what is measured).
 *    Wall time mean, σ and min, and user + system CPU, from hyperfine's JSON.
 * 3. Peak RSS: each command BENCH_RSS_RUNS times under GNU time (`/usr/bin/time -f %M`), the
 *    largest.
 *
 * BENCH_COMPARE=<path to another checkout's bin/stablebooks.js> times that binary's three
 * commands too, in the same run against the same database: before and after a change, side by
 * side under the same load. Prints the load average before and after, and the state of the
 * compiled build the binary runs from. No timing is asserted.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createDatabase } from '../src/db/database.ts';
import { runMigrations } from '../src/db/migrate.ts';
import { startEphemeralPostgres } from '../src/devservices/postgres.ts';
import { account, type Token } from '../src/ledger/accounts.ts';
import type { EntryDraft } from '../src/ledger/entryDraft.ts';
import { postEntry } from '../src/ledger/postEntry.ts';
import { fmt, log, positiveNumber, runBench, runCommand } from './benchKit.ts';

const RUNS = positiveNumber('BENCH_RUNS', 20);
const RSS_RUNS = positiveNumber('BENCH_RSS_RUNS', 5);
const ENTRIES = positiveNumber('BENCH_ENTRIES', 1000);
const BIN = fileURLToPath(new URL('../bin/stablebooks.js', import.meta.url));
const COMPARE = process.env.BENCH_COMPARE;
const GNU_TIME = '/usr/bin/time';

const TOKENS: Token[] = [
  { chainId: 8453, address: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', symbol: 'USDC', decimals: 6 },
  { chainId: 56, address: '0x55d398326f99059ff775485246999027b3197955', symbol: 'USDT', decimals: 18 },
];
const STORES = ['st_bench_a', 'st_bench_b'];

interface Measured {
  label: string;
  argv: string[];
  meanMs: number;
  stddevMs: number;
  minMs: number;
  cpuMs: number;
  maxRssKb: number;
}

interface HyperfineJson {
  results: Array<{ mean: number; stddev: number | null; min: number; user: number; system: number }>;
}

/** Checkout-like entries (in_transit N, service_fees F, sales -R), spread over the stores and tokens. */
async function fill(url: string): Promise<void> {
  const database = createDatabase(url, { max: 1, applicationName: 'stablebooks-bench-cli' });
  try {
    const run = Date.now().toString(36);
    for (let done = 0; done < ENTRIES; ) {
      const batch = Math.min(100, ENTRIES - done);
      await database.db.transaction(async (tx) => {
        for (let i = done; i < done + batch; i++) {
          const storeId = STORES[i % STORES.length]!;
          const token = TOKENS[Math.floor(i / STORES.length) % TOKENS.length]!;
          const R = (BigInt(100 + ((i * 7919) % 100_000)) * 10n ** BigInt(token.decimals)) / 100n;
          const F = R / 100n;
          const draft: EntryDraft = {
            idempotencyKey: `bench-cli:${run}:${i}`,
            kind: 'checkout.confirmed',
            occurredAt: new Date(),
            storeId,
            ref: { type: 'checkout_intent', id: `pi_${run}_${i}` },
            lines: [
              { account: account('assets:in_transit', storeId, token), amount: R - F },
              { account: account('expense:service_fees', storeId, token), amount: F },
              { account: account('income:sales', storeId, token), amount: -R },
            ],
          };
          await postEntry(tx, draft);
        }
      });
      done += batch;
    }
  } finally {
    await database.close();
  }
}

/** `node <argv>` under GNU time, RSS_RUNS times: the largest maximum resident set size, in KB. */
function maxRss(argv: string[]): number {
  let max = 0;
  for (let i = 0; i < RSS_RUNS; i++) {
    // GNU time writes its -f line last on stderr, after anything the command wrote there.
    const run = spawnSync(GNU_TIME, ['-f', '%M', 'node', ...argv], {
      encoding: 'utf8',
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    if (run.status !== 0) throw new Error(`node ${argv.join(' ')} exited with ${run.status}:\n${run.stderr}`);
    const out = run.stderr;
    max = Math.max(max, Number(out.trim().split('\n').at(-1)));
  }
  return max;
}

async function measure(
  commands: Array<{ label: string; argv: string[] }>,
  scratch: string,
): Promise<Measured[]> {
  const json = join(scratch, 'hyperfine.json');
  // -N: no shell in between, so the shell's start-up is not in the figure. The arguments have no
  // spaces, so hyperfine's splitting of each command line gives them back unchanged.
  const args = ['-N', '--warmup', '3', '--runs', String(RUNS), '--export-json', json, '--style', 'basic'];
  for (const c of commands) args.push(['node', ...c.argv].join(' '));
  log(`hyperfine: ${commands.length} commands, ${RUNS} runs each`);
  // The bench's environment (DATABASE_URL) reaches the commands through hyperfine.
  await runCommand('hyperfine', args, {
    onLine: (line) => {
      if (line.trim()) log(`  ${line}`);
    },
  });
  const results = (JSON.parse(readFileSync(json, 'utf8')) as HyperfineJson).results;
  return commands.map((c, i) => {
    const r = results[i];
    if (!r) throw new Error(`hyperfine reported no result for ${c.label}`);
    return {
      ...c,
      meanMs: r.mean * 1000,
      stddevMs: (r.stddev ?? 0) * 1000,
      minMs: r.min * 1000,
      cpuMs: (r.user + r.system) * 1000,
      maxRssKb: maxRss(c.argv),
    };
  });
}

/** What a checkout's bin/stablebooks.js runs: its compiled build when that is fresh (bin/cliBuild.js). */
async function runsFrom(bin: string): Promise<string> {
  const cliBuild = join(dirname(bin), 'cliBuild.js');
  if (!existsSync(cliBuild)) return 'the sources through tsx: no compiled build in this checkout';
  const { freshBuild } = (await import(pathToFileURL(cliBuild).href)) as typeof import('../bin/cliBuild.js');
  const built = freshBuild();
  return built
    ? `the compiled build, fresh: ${dirname(built)}`
    : 'the sources through tsx: the build is not fresh';
}

function loadLine(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

await runBench(async (cleanups) => {
  if (!existsSync(GNU_TIME))
    throw new Error(`${GNU_TIME} is missing: install GNU time (Debian package time) for the peak RSS`);
  const scratch = mkdtempSync(join(os.tmpdir(), 'stablebooks-bench-cli-'));
  cleanups.push(async () => rmSync(scratch, { recursive: true, force: true }));

  let url = process.env.DATABASE_URL;
  if (url) {
    log('using DATABASE_URL (its rows stay in it)');
  } else {
    log('starting an ephemeral PostgreSQL');
    const server = await startEphemeralPostgres();
    cleanups.push(() => server.stop());
    url = server.url;
  }
  await runMigrations(url);
  log(`posting ${fmt(ENTRIES)} entries`);
  await fill(url);

  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const hyperfineVersion = execFileSync('hyperfine', ['--version'], { encoding: 'utf8' }).trim();
  console.log(`machine: ${cpu}, ${os.cpus().length} cores (nproc), Node.js ${process.version}`);
  console.log(`${hyperfineVersion}; load average before: ${loadLine()}`);

  const bins = [{ name: 'stablebooks', bin: BIN }];
  if (COMPARE) bins.push({ name: 'compare', bin: COMPARE });
  const commands = [{ label: 'node -e 0', argv: ['-e', '0'] }];
  for (const b of bins) {
    console.log(`${b.name}: ${b.bin} runs ${await runsFrom(b.bin)}`);
    commands.push(
      { label: `${b.name} --version`, argv: [b.bin, '--version'] },
      { label: `${b.name} --help`, argv: [b.bin, '--help'] },
      { label: `${b.name} ledger balances`, argv: [b.bin, '--no-dotenv', 'ledger', 'balances'] },
    );
  }
  // hyperfine and GNU time pass the bench's environment on to the commands.
  process.env.DATABASE_URL = url;
  const measured = await measure(commands, scratch);

  const floor = measured[0]!;
  console.log('');
  console.log(
    `${'command'.padEnd(30)} ${'wall mean ± σ (ms)'.padStart(20)} ${'min'.padStart(7)} ${'over node -e 0'.padStart(15)} ${'CPU (ms)'.padStart(9)} ${'max RSS (MB)'.padStart(13)}`,
  );
  for (const m of measured) {
    console.log(
      `${m.label.padEnd(30)} ${`${fmt(m.meanMs)} ± ${fmt(m.stddevMs)}`.padStart(20)} ${fmt(m.minMs).padStart(7)} ${(m === floor ? '-' : `+${fmt(m.meanMs - floor.meanMs)}`).padStart(15)} ${fmt(m.cpuMs).padStart(9)} ${fmt(m.maxRssKb / 1024, 1).padStart(13)}`,
    );
  }
  console.log(`load average after: ${loadLine()}`);
});
