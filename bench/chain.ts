/**
 * Chain indexer benchmark (issue 6): RPC requests per proven payment and transfers indexed per
 * second, against anvil. Run with `npm run bench:chain` (about 3 minutes).
 *
 * 1. Backfill: BENCH_TRANSFERS Transfer logs of the sandbox's USDC and USDT into and out of the
 *    store's watched wallets (merchant and custody) are put on chain first, a few per block with
 *    an empty block after each (automine off, several unlocked senders, `anvil_mine`); then the
 *    indexer's passes run back to back from block 0 until its cursor reaches the head. Reports
 *    transfers indexed per second and the RPC requests (and HTTP round trips) it took.
 * 2. Steady state: payments arrive at BENCH_RATE per second for BENCH_SECONDS while anvil mines a
 *    block every BENCH_BLOCK_SECONDS (so several payments share a block, as on a real L2). Each
 *    payment is a direct USDC transfer from a buyer to the merchant wallet plus its confirmed
 *    checkout intent (status 20, tx_hash = the transfer, P = N, no fee) recorded through
 *    applyIntentSnapshot, which posts rule 1. Every BENCH_PASS_SECONDS the daemon's chain job
 *    runs (indexChainPass, then settleTransfers), until every payment has its
 *    `chain.payment_proven` entry (rule 2) once its transfer is BENCH_DEPTH blocks deep.
 *    Reports RPC requests per proven payment, by method, and HTTP round trips (batches count once).
 *
 * RPC requests are read from the indexer's own metric (stablebooks_rpc_requests_total: every
 * logical JSON-RPC request, batched or not); HTTP round trips by counting the indexer's fetch
 * calls (it reads anvil through a URL of its own spelling, so the load generator's calls are not
 * counted). Starts its own durable PostgreSQL and anvil and stops them, also on error or Ctrl-C.
 * No figure is asserted: they are printed, with a block for docs/benchmarks.md.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  numberToHex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { type IndexerDeps, indexChainPass } from '../src/chain/indexChain.ts';
import { createChainRpc } from '../src/chain/rpcClients.ts';
import { systemClock } from '../src/clock.ts';
import { createChainRegistry } from '../src/config/chainRegistry.ts';
import type { StoreConfig } from '../src/config/stores.ts';
import { createDatabase, type Database } from '../src/db/database.ts';
import { runMigrations } from '../src/db/migrate.ts';
import { anvilBinaryPath, startAnvil } from '../src/devservices/anvil.ts';
import { startEphemeralPostgres } from '../src/devservices/postgres.ts';
import { createAccountCache } from '../src/ledger/ensureAccounts.ts';
import { createLogger } from '../src/logging/logger.ts';
import { createMetrics, type Metrics } from '../src/metrics/metrics.ts';
import { applyIntentSnapshot } from '../src/payments/applyIntentSnapshot.ts';
import {
  sandboxTokenAbi,
  sandboxTokenBytecode,
} from '../src/sandbox/chain/contracts/sandboxTokenArtifact.ts';
import type { SettlementDeps } from '../src/settlement/settlementDeps.ts';
import { settleTransfers } from '../src/settlement/settleTransfers.ts';
import type { CheckoutIntent } from '../src/svc/models/checkoutIntent.ts';
import { type Cleanups, fmt, log, positiveNumber, runBench, sleep } from './benchKit.ts';

const TRANSFERS = Math.round(positiveNumber('BENCH_TRANSFERS', 10_000));
const PER_BLOCK = Math.round(positiveNumber('BENCH_BACKFILL_PER_BLOCK', 5));
const RATE = positiveNumber('BENCH_RATE', 20);
const SECONDS = positiveNumber('BENCH_SECONDS', 60);
const BLOCK_SECONDS = Math.round(positiveNumber('BENCH_BLOCK_SECONDS', 1));
const PASS_SECONDS = positiveNumber('BENCH_PASS_SECONDS', 4);
const DEPTH = Math.round(positiveNumber('BENCH_DEPTH', 10));
const CHAIN_ID = 31337;
const STORE_ID = 'st_bench';
/** anvil's default mnemonic accounts: unlocked, so eth_sendTransaction needs no client-side signing. */
const DEV_KEY_0 = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const PAYMENT_UNITS = 25_000_000n; // 25 USDC (6 decimals)
const GAS = numberToHex(100_000);
const GAS_PRICE = numberToHex(10_000_000_000n);

// ---------------------------------------------------------------------------------------------
// Raw JSON-RPC for the load generator (a URL spelling the indexer does not use).

interface RpcItem {
  method: string;
  params: unknown[];
}

async function rpcBatch(url: string, items: RpcItem[]): Promise<unknown[]> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(items.map((it, id) => ({ jsonrpc: '2.0', id, ...it }))),
  });
  const body = (await res.json()) as Array<{ id: number; result?: unknown; error?: { message: string } }>;
  const out: unknown[] = new Array(items.length);
  for (const r of body) {
    if (r.error) throw new Error(`${items[r.id]?.method}: ${r.error.message}`);
    out[r.id] = r.result;
  }
  return out;
}

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const [result] = await rpcBatch(url, [{ method, params }]);
  return result;
}

/** Senders whose nonces the bench counts itself (with automine off, the pool holds many per sender). */
function createSenders(nonces: Map<Address, number>) {
  return (from: Address, token: Address, to: Address, value: bigint): RpcItem => {
    const nonce = nonces.get(from) ?? 0;
    nonces.set(from, nonce + 1);
    return {
      method: 'eth_sendTransaction',
      params: [
        {
          from,
          to: token,
          gas: GAS,
          gasPrice: GAS_PRICE,
          nonce: numberToHex(nonce),
          data: encodeFunctionData({ abi: sandboxTokenAbi, functionName: 'transfer', args: [to, value] }),
        },
      ],
    };
  };
}

// ---------------------------------------------------------------------------------------------
// Counting the indexer's RPC use.

/** HTTP requests (round trips) the indexer's transport sent, counted at fetch. */
function countFetches(url: string): { count: () => number } {
  let n = 0;
  const original = globalThis.fetch;
  globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const target = typeof input === 'string' ? input : input instanceof URL ? input.toString() : input.url;
    if (target === url) n++;
    return original(input, init);
  }) as typeof fetch;
  return { count: () => n };
}

type MethodCounts = Map<string, number>;

async function rpcRequests(metrics: Metrics): Promise<MethodCounts> {
  const metric = await metrics.registry.getSingleMetric('stablebooks_rpc_requests_total')?.get();
  const out: MethodCounts = new Map();
  for (const v of metric?.values ?? []) {
    const method = String(v.labels.method);
    out.set(method, (out.get(method) ?? 0) + v.value);
  }
  return out;
}

function difference(after: MethodCounts, before: MethodCounts): MethodCounts {
  const out: MethodCounts = new Map();
  for (const [m, n] of after) if (n - (before.get(m) ?? 0) > 0) out.set(m, n - (before.get(m) ?? 0));
  return out;
}

const total = (c: MethodCounts) => [...c.values()].reduce((a, b) => a + b, 0);
const byMethod = (c: MethodCounts) =>
  [...c]
    .sort((a, b) => b[1] - a[1])
    .map(([m, n]) => `${m} ${fmt(n)}`)
    .join(', ');

// ---------------------------------------------------------------------------------------------

interface Setup {
  anvilUrl: string;
  /** The indexer's spelling of the same URL (trailing slash): what countFetches counts. */
  indexerUrl: string;
  database: Database;
  usdc: Address;
  usdt: Address;
  merchant: Address;
  custody: Address;
  buyers: Address[];
  strangers: Address[];
  nonces: Map<Address, number>;
}

async function deployTokens(anvilUrl: string): Promise<{ usdc: Address; usdt: Address }> {
  const chain = {
    id: CHAIN_ID,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [anvilUrl] } },
  } as const;
  const wallet = createWalletClient({
    account: privateKeyToAccount(DEV_KEY_0),
    chain,
    transport: http(anvilUrl),
  });
  const client = createPublicClient({ chain, transport: http(anvilUrl) });
  const deploy = async (name: string, symbol: string) => {
    const hash = await wallet.deployContract({
      abi: sandboxTokenAbi,
      bytecode: sandboxTokenBytecode,
      args: [name, symbol, 6],
    });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    if (!receipt.contractAddress) throw new Error(`deploying ${symbol} failed`);
    return receipt.contractAddress.toLowerCase() as Address;
  };
  return { usdt: await deploy('Tether USD (bench)', 'USDT'), usdc: await deploy('USD Coin (bench)', 'USDC') };
}

/** Mints every sender plenty of both tokens (automine still on: one block each). */
async function fund(s: Setup, deployer: Address): Promise<void> {
  const holders = [...s.buyers, s.merchant, s.custody];
  let nonce = Number(await rpc(s.anvilUrl, 'eth_getTransactionCount', [deployer, 'latest']));
  for (const token of [s.usdc, s.usdt]) {
    for (const to of holders) {
      await rpc(s.anvilUrl, 'eth_sendTransaction', [
        {
          from: deployer,
          to: token,
          gas: GAS,
          gasPrice: GAS_PRICE,
          nonce: numberToHex(nonce++),
          data: encodeFunctionData({ abi: sandboxTokenAbi, functionName: 'mint', args: [to, 10n ** 15n] }),
        },
      ]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Phase 1: backfill.

interface BackfillResult {
  transfers: number;
  blocks: bigint;
  putOnChainSeconds: number;
  seconds: number;
  passes: number;
  requests: MethodCounts;
  roundTrips: number;
}

async function backfill(
  s: Setup,
  deps: IndexerDeps,
  metrics: Metrics,
  fetches: { count: () => number },
): Promise<BackfillResult> {
  const send = createSenders(s.nonces);
  const t0 = performance.now();
  await rpc(s.anvilUrl, 'evm_setAutomine', [false]);
  const blocksWithTransfers = Math.ceil(TRANSFERS / PER_BLOCK);
  log(
    `backfill: putting ${fmt(TRANSFERS)} transfers on chain, ${PER_BLOCK} per block, ` +
      `each block followed by an empty one (${fmt(blocksWithTransfers * 2)} blocks)`,
  );
  let sent = 0;
  for (let b = 0; b < blocksWithTransfers; b++) {
    const items: RpcItem[] = [];
    for (let i = 0; i < PER_BLOCK && sent < TRANSFERS; i++, sent++) {
      const token = sent % 2 === 0 ? s.usdc : s.usdt;
      const buyer = s.buyers[sent % s.buyers.length]!;
      const stranger = s.strangers[sent % s.strangers.length]!;
      // Half into the merchant wallet, a quarter into custody, the rest out of one of them.
      const kind = sent % 20;
      if (kind < 10) items.push(send(buyer, token, s.merchant, 1_000_000n + BigInt(sent)));
      else if (kind < 15) items.push(send(buyer, token, s.custody, 2_000_000n + BigInt(sent)));
      else if (kind < 18) items.push(send(s.merchant, token, stranger, 100_000n + BigInt(sent)));
      else items.push(send(s.custody, token, stranger, 200_000n + BigInt(sent)));
    }
    await rpcBatch(s.anvilUrl, items);
    await rpc(s.anvilUrl, 'anvil_mine', [numberToHex(2)]);
    if ((b + 1) % 500 === 0) log(`  ${fmt(sent)} transfers sent, ${fmt((b + 1) * 2)} blocks mined`);
  }
  const head = BigInt((await rpc(s.anvilUrl, 'eth_blockNumber')) as string);
  const putOnChainSeconds = (performance.now() - t0) / 1000;
  log(`backfill: ${fmt(sent)} transfers on chain up to block ${head} in ${putOnChainSeconds.toFixed(1)} s`);

  const before = await rpcRequests(metrics);
  const fetchesBefore = fetches.count();
  const start = performance.now();
  let passes = 0;
  let found = 0;
  for (;;) {
    const outcome = await indexChainPass(deps, CHAIN_ID);
    passes++;
    found += outcome.transfersFound;
    if (outcome.skipped) throw new Error(`backfill pass skipped: ${outcome.skipped} ${outcome.error ?? ''}`);
    log(
      `  pass ${passes}: blocks ${outcome.fromBlock ?? '-'}..${outcome.toBlock ?? '-'}, ` +
        `${fmt(outcome.transfersFound)} transfers, lag ${outcome.lag}`,
    );
    if (outcome.lag === 0) break;
  }
  const seconds = (performance.now() - start) / 1000;
  const requests = difference(await rpcRequests(metrics), before);
  const roundTrips = fetches.count() - fetchesBefore;
  const { rows } = await s.database.db.execute<{ n: string }>(
    sql`select count(*)::text as n from chain_transfers where chain_id = ${CHAIN_ID}`,
  );
  const stored = Number(rows[0]?.n ?? 0);
  // Plus the funding mints into the merchant and custody wallets, one per token.
  if (stored !== TRANSFERS + 4) log(`WARNING: ${fmt(stored)} rows stored, expected ${fmt(TRANSFERS + 4)}`);
  log(
    `backfill: ${fmt(found)} transfers indexed in ${seconds.toFixed(2)} s (${fmt(found / seconds)}/s), ` +
      `${passes} passes, ${fmt(total(requests))} RPC requests in ${fmt(roundTrips)} HTTP round trips`,
  );
  return { transfers: found, blocks: head, putOnChainSeconds, seconds, passes, requests, roundTrips };
}

// ---------------------------------------------------------------------------------------------
// Phase 2: steady state.

interface SteadyResult {
  payments: number;
  proven: number;
  generateSeconds: number;
  seconds: number;
  blocks: bigint;
  passes: number;
  requests: MethodCounts;
  roundTrips: number;
  /** Seconds from sending a payment to the end of the pass that proved it. */
  latency: { p50: number; p95: number; max: number };
  passMs: { p50: number; max: number };
  /** Median ms of the indexer pass and of settleTransfers within a pass. */
  indexMs: number;
  applyMs: number;
  idleRequestsPerPass: number | null;
}

function intentFor(s: Setup, id: string, buyer: Address, txHash: Hex): CheckoutIntent {
  return {
    all_svc_checkout_intent_id: id,
    currency: null,
    currency_symbol: null,
    amount_cents: null,
    chain_id: CHAIN_ID,
    amount_coins: '25',
    coin_symbol: 'USDC',
    coin_contract: s.usdc,
    currency_rate: null,
    status: 20,
    order_id: `order-${id}`,
    order_description: null,
    user_id: null,
    user_name: null,
    error_message: null,
    tx_hash: txHash,
    tx_hash_2: null,
    tx_from: buyer,
    tx_to: s.merchant,
    actual_paid_amount: '25',
    service_fee_amount: '0',
    net_income_amount: '25',
    payment_method_type: 2,
    accepted_stable_coins: 2,
  } as CheckoutIntent;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function steadyState(
  s: Setup,
  deps: IndexerDeps,
  apply: SettlementDeps,
  metrics: Metrics,
  fetches: { count: () => number },
): Promise<SteadyResult> {
  const db = s.database.db;
  const chains = apply.config.chains;
  const accounts = apply.accounts;
  const send = createSenders(s.nonces);
  const total_ = Math.round(RATE * SECONDS);
  log(
    `steady state: ${RATE} payments/s for ${SECONDS} s (${fmt(total_)} payments), a block every ` +
      `${BLOCK_SECONDS} s, final at depth ${DEPTH}, a chain pass (index + apply) every ${PASS_SECONDS} s`,
  );
  const startHead = BigInt((await rpc(s.anvilUrl, 'eth_blockNumber')) as string);
  const before = await rpcRequests(metrics);
  const fetchesBefore = fetches.count();
  const t0 = performance.now();
  await rpc(s.anvilUrl, 'evm_setIntervalMining', [BLOCK_SECONDS]);

  const sentAt = new Map<string, number>();
  const provenAt = new Map<string, number>();
  let sent = 0;
  let generating = true;
  let generateSeconds = 0;
  const generator = (async () => {
    const interval = 1000 / RATE;
    for (let n = 0; n < total_; n++) {
      const due = t0 + n * interval;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const buyer = s.buyers[n % s.buyers.length]!;
      const [hash] = (await rpcBatch(s.anvilUrl, [send(buyer, s.usdc, s.merchant, PAYMENT_UNITS)])) as Hex[];
      const id = `bench${n.toString(16).padStart(19, '0')}`;
      sentAt.set(id, performance.now());
      await db.transaction((tx) =>
        applyIntentSnapshot(
          tx,
          { chains, stores: apply.config.stores, accounts },
          {
            storeId: STORE_ID,
            intent: intentFor(s, id, buyer, hash!),
            source: 'poll',
            observedAt: new Date(),
          },
        ),
      );
      sent++;
    }
    generateSeconds = (performance.now() - t0) / 1000;
    generating = false;
  })();

  let passes = 0;
  let lastEntryId = 0n;
  const passMs: number[] = [];
  const indexMs: number[] = [];
  const applyMs: number[] = [];
  const idlePassRequests: number[] = [];
  const deadline = t0 + (SECONDS + (DEPTH + 2) * BLOCK_SECONDS + 6 * PASS_SECONDS + 60) * 1000;
  let nextPass = t0 + PASS_SECONDS * 1000;
  for (;;) {
    const wait = nextPass - performance.now();
    if (wait > 0) await sleep(wait);
    nextPass += PASS_SECONDS * 1000;
    const requestsBefore = total(await rpcRequests(metrics));
    const p0 = performance.now();
    const indexed = await indexChainPass(deps, CHAIN_ID);
    const pIndexed = performance.now();
    const applied = await settleTransfers(apply, CHAIN_ID);
    const p1 = performance.now();
    passes++;
    passMs.push(p1 - p0);
    indexMs.push(pIndexed - p0);
    applyMs.push(p1 - pIndexed);
    const passRequests = total(await rpcRequests(metrics)) - requestsBefore;
    if (indexed.transfersFound === 0 && indexed.fromBlock === null) idlePassRequests.push(passRequests);
    const { rows } = await db.execute<{ id: string; ref_id: string }>(sql`
      select id::text, ref_id from ledger_entries
      where kind = 'chain.payment_proven' and id > ${lastEntryId.toString()}::bigint order by id`);
    for (const r of rows) {
      provenAt.set(r.ref_id, p1);
      lastEntryId = BigInt(r.id);
    }
    const soFar = difference(await rpcRequests(metrics), before);
    log(
      `  pass ${passes} at ${((p1 - t0) / 1000).toFixed(0)} s: ${fmt(sent)} paid, ${fmt(provenAt.size)} proven, ` +
        `${fmt(indexed.transfersFound)} found, ${fmt(indexed.finalized)} final, ${fmt(applied.applied)} applied, ` +
        `${passRequests} requests this pass (${fmt(total(soFar))} so far), ${(p1 - p0).toFixed(0)} ms` +
        (indexed.skipped ? `, skipped: ${indexed.skipped}` : ''),
    );
    if (!generating && provenAt.size >= sent) break;
    if (performance.now() > deadline) {
      log(`WARNING: gave up waiting: ${fmt(provenAt.size)} of ${fmt(sent)} payments proven`);
      break;
    }
  }
  await generator;
  await rpc(s.anvilUrl, 'evm_setIntervalMining', [0]);
  const seconds = (performance.now() - t0) / 1000;
  const requests = difference(await rpcRequests(metrics), before);
  const roundTrips = fetches.count() - fetchesBefore;
  const endHead = BigInt((await rpc(s.anvilUrl, 'eth_blockNumber')) as string);
  const latencies = [...provenAt]
    .map(([id, at]) => (at - (sentAt.get(id) ?? at)) / 1000)
    .sort((a, b) => a - b);
  const sortedPass = [...passMs].sort((a, b) => a - b);
  return {
    payments: sent,
    proven: provenAt.size,
    generateSeconds,
    seconds,
    blocks: endHead - startHead,
    passes,
    requests,
    roundTrips,
    latency: {
      p50: percentile(latencies, 50),
      p95: percentile(latencies, 95),
      max: latencies[latencies.length - 1] ?? Number.NaN,
    },
    passMs: { p50: percentile(sortedPass, 50), max: sortedPass[sortedPass.length - 1] ?? Number.NaN },
    indexMs: percentile(
      [...indexMs].sort((a, b) => a - b),
      50,
    ),
    applyMs: percentile(
      [...applyMs].sort((a, b) => a - b),
      50,
    ),
    idleRequestsPerPass:
      idlePassRequests.length > 0
        ? idlePassRequests.reduce((a, b) => a + b, 0) / idlePassRequests.length
        : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Orchestration.

function versionOf(binary: string, args: string[]): string {
  try {
    return execFileSync(binary, args, { encoding: 'utf8' }).split('\n')[0]?.trim() ?? '?';
  } catch {
    return '?';
  }
}

async function run(cleanups: Cleanups): Promise<void> {
  log('starting PostgreSQL (durable) and anvil');
  const pg = await startEphemeralPostgres({ durable: true });
  cleanups.push(() => pg.stop());
  await runMigrations(pg.url);
  const database = createDatabase(pg.url, { max: 4, applicationName: 'stablebooks-bench-chain' });
  cleanups.push(() => database.close());
  const anvil = await startAnvil({ chainId: CHAIN_ID });
  cleanups.push(() => anvil.stop());
  const anvilVersion = versionOf(anvilBinaryPath(), ['--version']);
  const { rows: pgVersion } = await database.db.execute<{ v: string }>(sql`select version() as v`);

  const { usdc, usdt } = await deployTokens(anvil.rpcUrl);
  const accounts = ((await rpc(anvil.rpcUrl, 'eth_accounts')) as string[]).map(
    (a) => a.toLowerCase() as Address,
  );
  const [deployer, merchant, custody, ...buyers] = accounts;
  if (!deployer || !merchant || !custody || buyers.length < 2) throw new Error('anvil has too few accounts');
  const strangers = Array.from(
    { length: 16 },
    (_, i) => `0x${(0xbe00 + i).toString(16).padStart(40, '0')}` as Address,
  );
  const setup: Setup = {
    anvilUrl: anvil.rpcUrl,
    indexerUrl: `${anvil.rpcUrl}/`,
    database,
    usdc,
    usdt,
    merchant,
    custody,
    buyers,
    strangers,
    nonces: new Map(),
  };
  await fund(setup, deployer);
  for (const a of [...buyers, merchant, custody]) {
    setup.nonces.set(a, Number(await rpc(anvil.rpcUrl, 'eth_getTransactionCount', [a, 'latest'])));
  }
  log(`tokens deployed (USDC ${usdc}, USDT ${usdt}); ${buyers.length} buyers funded`);

  const registry = createChainRegistry([
    {
      chain_id: CHAIN_ID,
      name: 'anvil',
      tokens: { USDT: { address: usdt, decimals: 6 }, USDC: { address: usdc, decimals: 6 } },
      finality: { finalized_tag: false, depth: DEPTH },
      start_block: 0,
    },
  ]);
  const stores: StoreConfig[] = [
    {
      storeId: STORE_ID,
      businessId: 'biz_bench',
      apiKey: 'key_bench',
      apiSecret: 'secret-bench-0123456789',
      signedResponse: false,
      functionalCurrency: 'USD',
      par: new Map(),
      wallets: new Map([[CHAIN_ID, { merchant, custody }]]),
    },
  ];
  const info = registry.chain(CHAIN_ID)!;
  const metrics = createMetrics();
  const fetches = countFetches(setup.indexerUrl);
  const logger = createLogger({ level: 'warn', name: 'bench-chain' });
  const deps: IndexerDeps = {
    db: database.db,
    pool: database.pool,
    config: { stores, chains: registry },
    rpc: createChainRpc(info, [setup.indexerUrl], metrics),
    metrics,
    logger,
  };
  const apply: SettlementDeps = {
    db: database.db,
    config: { stores, chains: registry },
    accounts: createAccountCache(),
    clock: systemClock,
    unmatchedGraceMs: 60_000,
  };

  const back = await backfill(setup, deps, metrics, fetches);
  // The backfill's transfers are strangers' money as far as matching goes: booking 10,000 of them
  // to suspense is not what this bench measures, so they are marked as handled directly.
  await database.db.execute(sql`
    update chain_transfers set applied_at = now(), matched_as = 'ignored' where chain_id = ${CHAIN_ID}`);
  const steady = await steadyState(setup, deps, apply, metrics, fetches);

  // Results.
  const perPayment = (n: number) => (steady.proven > 0 ? n / steady.proven : Number.NaN);
  const machine = {
    cpus: `${os.cpus().length} x ${os.cpus()[0]?.model ?? '?'}`,
    memory: `${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    anvil: anvilVersion,
    postgres: (pgVersion[0]?.v ?? '?').split(' on ')[0] ?? '?',
  };
  console.log('\n## Machine\n');
  for (const [k, v] of Object.entries(machine)) console.log(`- ${k}: ${v}`);
  console.log(
    `- load average at end (1/5/15 min): ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')}`,
  );
  console.log('\n## Backfill\n');
  console.log(
    `- ${fmt(back.transfers)} transfers over ${fmt(Number(back.blocks))} blocks (${PER_BLOCK} per block, ` +
      `every other block empty), put on chain in ${back.putOnChainSeconds.toFixed(1)} s`,
  );
  console.log(
    `- indexed in ${back.seconds.toFixed(2)} s: **${fmt(back.transfers / back.seconds)} transfers/s**, ` +
      `${back.passes} pass(es)`,
  );
  console.log(
    `- RPC requests: ${fmt(total(back.requests))} (${byMethod(back.requests)}) in ${fmt(back.roundTrips)} ` +
      `HTTP round trips`,
  );
  console.log('\n## Steady state\n');
  console.log(
    `- ${fmt(steady.payments)} payments at ${RATE}/s over ${steady.generateSeconds.toFixed(1)} s; ` +
      `a block every ${BLOCK_SECONDS} s (${fmt(Number(steady.blocks))} blocks in the phase), final at depth ${DEPTH}; ` +
      `a chain pass every ${PASS_SECONDS} s (${steady.passes} passes, p50 ${steady.passMs.p50.toFixed(0)} ms, ` +
      `max ${steady.passMs.max.toFixed(0)} ms; p50 of the indexer pass ${steady.indexMs.toFixed(0)} ms, of ` +
      `settleTransfers ${steady.applyMs.toFixed(0)} ms)`,
  );
  console.log(
    `- proven: ${fmt(steady.proven)} of ${fmt(steady.payments)} in ${steady.seconds.toFixed(1)} s; ` +
      `send to proof p50 ${steady.latency.p50.toFixed(1)} s, p95 ${steady.latency.p95.toFixed(1)} s, ` +
      `max ${steady.latency.max.toFixed(1)} s`,
  );
  console.log(
    `- RPC requests: ${fmt(total(steady.requests))} = **${perPayment(total(steady.requests)).toFixed(3)} per proven ` +
      `payment** (target < 0.1): ${perPayment(total(steady.requests)) < 0.1 ? 'met' : 'NOT met'}`,
  );
  for (const [method, n] of [...steady.requests].sort((a, b) => b[1] - a[1])) {
    console.log(
      `  - ${method}: ${fmt(n)} (${perPayment(n).toFixed(3)} per payment, ${(n / steady.passes).toFixed(2)} per pass)`,
    );
  }
  console.log(
    `- HTTP round trips: ${fmt(steady.roundTrips)} = ${perPayment(steady.roundTrips).toFixed(3)} per proven payment, ` +
      `${(steady.roundTrips / steady.passes).toFixed(2)} per pass`,
  );
  if (steady.idleRequestsPerPass !== null) {
    console.log(`- passes that found no new block: ${steady.idleRequestsPerPass.toFixed(1)} requests each`);
  }
}

runBench(run).catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  // drizzle wraps the driver's error: its message says what PostgreSQL refused.
  for (let cause = (err as Error)?.cause; cause instanceof Error; cause = cause.cause) {
    console.error(`caused by: ${cause.message}`);
  }
  process.exitCode = 1;
});
