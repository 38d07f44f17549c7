/**
 * Reconciliation benchmark: how long a full reconciliation run of one store over 30 days takes,
 * and how much memory it needs, on a database the size of a busy merchant's month. Run with
 * `npm run bench:recon`.
 *
 * 1. Fill. Starts its own durable PostgreSQL (fsync, synchronous_commit, full_page_writes on; as
 *    bench/ledger.ts and bench/chain.ts do) or uses DATABASE_URL (a scratch database: the rows
 *    stay), runs the migrations, and writes one store `st_bench` on Base (8453, USDC and USDT)
 *    over the 30 days ending yesterday UTC: BENCH_INTENTS checkout intents (90% CONFIRMED, the
 *    rest CREATED, VIEWED, TIMEOUT, CANCELED, FAILED), one final chain transfer into the merchant
 *    wallet per confirmed intent (N through the service's temporary wallet, tx_hash_2, for the 90%
 *    that pay a 1% fee; P straight from the buyer, tx_hash, for the rest), owner withdrawals out
 *    of the merchant wallet up to BENCH_TRANSFERS transfers, one processed checkout webhook per
 *    confirmed intent (ref_id and actual_paid_amount filled as processing fills them), the findings the rules report
 *    (underpaid / overpaid, unmatched transfers; withdrawals acked) and the ledger: for each
 *    confirmed intent its rule-1 entry (`checkout.confirmed`) and its rule-2 proof
 *    (`chain.payment_proven`), for each withdrawal its rule-9 entry. Every entry is built by the
 *    posting rules themselves (checkoutConfirmed, paymentProven, unmatchedTransfer) and hashed as
 *    postEntry hashes it; after the fill a few are posted again through postEntry, which must
 *    find them as idempotent replays (same key, same content hash). About 0.1% of the intents
 *    carry a problem: confirmed without a chain transfer, confirmed without a webhook, a webhook
 *    whose actual_paid_amount disagrees with the intent; plus a few stray transfers into the
 *    merchant wallet (suspense).
 *
 *    How: real COPY (pg-copy-streams, FROM STDIN in CSV), generated in Node batch by batch
 *    (BENCH_BATCH intents per transaction) and streamed with back-pressure: the row data needs the
 *    rules and the content hashes computed in TypeScript, which server-side `INSERT ... SELECT
 *    generate_series` could only imitate. Entry ids are reserved from the sequence per batch so
 *    the postings can name them; entries and their postings go in the same transaction, with the
 *    ledger's triggers on (same-transaction rule, commit-time balance check per entry).
 *
 * 2. Run. Calls runReconciliation (src/recon/runReconciliation.ts) for the whole 30 days in a child
 *    Node process, so that its peak memory is the run's and not the fill's: wall time, per-phase
 *    timings from onProgress, RSS sampled every 50 ms and process.resourceUsage().maxRSS, against
 *    the targets (under 20 s, under 256 MB). `rpcs` is an empty map: there is no chain to read, so
 *    the balance proofs fail with a reason, which the run reports; their RPC time is not measured.
 *
 * Environment: BENCH_INTENTS (default 1000000), BENCH_TRANSFERS (default = BENCH_INTENTS),
 * BENCH_BATCH (default 25000 intents per fill transaction), BENCH_FORMATS (default
 * json,csv,md,html), BENCH_FILL_ONLY=1 (stop after the fill and its checks), DATABASE_URL,
 * BENCH_REUSE=1 (DATABASE_URL already holds a fill: skip it and run; runs again on the same rows
 * refresh the findings the first one opened) and BENCH_PERIOD_END (the period's end date, for a
 * fill made on an earlier day; default today UTC).
 * No timing is asserted: the figures are printed.
 */

import { type ChildProcess, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createChainRegistry } from '../src/config/chainRegistry.ts';
import { createDatabase, type Db } from '../src/db/database.ts';
import { runMigrations } from '../src/db/migrate.ts';
import { startEphemeralPostgres } from '../src/devservices/postgres.ts';
import type { FindingDraft } from '../src/findings/finding.ts';
import { type AccountRef, account, accountCode, assetOf, type Token } from '../src/ledger/accounts.ts';
import { contentHash } from '../src/ledger/contentHash.ts';
import { ensureAccounts, type ResolvedAccount } from '../src/ledger/ensureAccounts.ts';
import type { EntryDraft } from '../src/ledger/entryDraft.ts';
import { postEntry } from '../src/ledger/postEntry.ts';
import type { ChainTransferFact } from '../src/ledger/rules/chainTransferFact.ts';
import { paymentProven, unmatchedTransfer } from '../src/ledger/rules/chainTransferRules.ts';
import { checkoutConfirmed } from '../src/ledger/rules/checkoutRules.ts';
import { formatDecimalAmount } from '../src/money/decimalAmount.ts';
import type { ReportFormat } from '../src/recon/report/writeReportFiles.ts';
import { mulberry32 } from '../src/seededRandom.ts';
import { CheckoutStatus } from '../src/svc/models/checkoutStatus.ts';
import { type Cleanups, fmt, log, positiveNumber, runBench, sleep } from './benchKit.ts';
import type { ChildReport } from './reconChild.ts';

/** Set on Ctrl-C (and SIGTERM): the fill stops at the next batch while runBench cleans up. */
let interrupted = false;

const INTENTS = Math.round(positiveNumber('BENCH_INTENTS', 1_000_000));
const TRANSFERS = Math.round(positiveNumber('BENCH_TRANSFERS', INTENTS));
const BATCH = Math.round(positiveNumber('BENCH_BATCH', 25_000));
const FILL_ONLY = process.env.BENCH_FILL_ONLY === '1';
const REUSE = process.env.BENCH_REUSE === '1';
const TARGET_SECONDS = 20;
const TARGET_RSS_MB = 256;

const STORE_ID = 'st_bench';
const CHAIN_ID = 8453;
const DAY_MS = 86_400_000;
/** Base makes a block every 2 s; block numbers follow time from this one at the period's start. */
const BLOCK_MS = 2000;
const FIRST_BLOCK = 20_000_000n;
/** Intents are created up to this long before the period's end, so everything they cause falls inside. */
const TAIL_MS = 3_600_000;

const hex = (label: string) => createHash('sha256').update(label).digest('hex');
const address = (label: string) => `0x${hex(label).slice(0, 40)}` as `0x${string}`;
const MERCHANT = address('bench:merchant');
const CUSTODY = address('bench:custody');
const OWNER = address('bench:owner');

const REGISTRY = createChainRegistry([]);
function registryToken(contract: string): Token {
  const token = REGISTRY.token(CHAIN_ID, contract);
  if (!token) throw new Error(`the chain registry does not accept ${contract} on chain ${CHAIN_ID}`);
  return token;
}
const USDC = registryToken('0x833589fcd6edb6e08f4c7c32d4f71b54bda02913');
const USDT = registryToken('0xfde4c96c8593536e31f229ea8f37b2ada2699bb2');
const TOKENS = [USDC, USDT] as const;

/**
 * The period: the 30 whole UTC days before today, or before BENCH_PERIOD_END (a date) for a
 * database filled on an earlier day and reused (BENCH_REUSE=1).
 */
function period(): { from: Date; to: Date } {
  const end = process.env.BENCH_PERIOD_END;
  const now = end ? new Date(`${end}T00:00:00Z`) : new Date();
  if (Number.isNaN(now.getTime())) throw new Error(`BENCH_PERIOD_END: ${end} is not a date (2026-11-22)`);
  const to = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return { from: new Date(to - 30 * DAY_MS), to: new Date(to) };
}

// ---------------------------------------------------------------------------------------------
// CSV for COPY ... FROM STDIN (FORMAT csv): an unquoted empty field is NULL.

type Cell = string | number | bigint | Date | null;

function cell(v: Cell): string {
  if (v === null) return '';
  if (v instanceof Date) return v.toISOString();
  const s = typeof v === 'string' ? v : v.toString();
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const csvRow = (cells: Cell[]) => `${cells.map(cell).join(',')}\n`;
const json = (v: unknown) =>
  JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));

// ---------------------------------------------------------------------------------------------
// The plan: each intent's status and problem, drawn first so the transfer count can be exact.

const Problem = { none: 0, noTransfer: 1, noWebhook: 2, webhookAmount: 3 } as const;

interface Plan {
  status: Int8Array;
  problem: Uint8Array;
  proofs: number;
  /** Intent index after which each extra transfer happens, and whether it is a stray deposit. */
  extras: Map<number, Array<'withdrawal' | 'stray'>>;
  withdrawals: number;
  strays: number;
}

function makePlan(): Plan {
  const rnd = mulberry32(1);
  const status = new Int8Array(INTENTS);
  const problem = new Uint8Array(INTENTS);
  let proofs = 0;
  for (let i = 0; i < INTENTS; i++) {
    const r = rnd();
    status[i] =
      r < 0.9
        ? CheckoutStatus.CONFIRMED
        : r < 0.93
          ? CheckoutStatus.CREATED
          : r < 0.95
            ? CheckoutStatus.VIEWED
            : r < 0.98
              ? CheckoutStatus.TIMEOUT
              : r < 0.99
                ? CheckoutStatus.CANCELED
                : CheckoutStatus.FAILED;
    if (status[i] !== CheckoutStatus.CONFIRMED) continue;
    const p = rnd();
    problem[i] =
      p < 0.0004
        ? Problem.noTransfer
        : p < 0.0007
          ? Problem.noWebhook
          : p < 0.0009
            ? Problem.webhookAmount
            : Problem.none;
    if (problem[i] !== Problem.noTransfer) proofs++;
  }
  const strays = Math.min(Math.max(0, TRANSFERS - proofs), Math.max(1, Math.round(INTENTS * 0.0001)));
  const withdrawals = Math.max(0, TRANSFERS - proofs - strays);
  const extras = new Map<number, Array<'withdrawal' | 'stray'>>();
  const place = (n: number, kind: 'withdrawal' | 'stray') => {
    for (let j = 0; j < n; j++) {
      const at = Math.min(INTENTS - 1, Math.floor(((j + 0.5) * INTENTS) / n));
      const list = extras.get(at) ?? [];
      list.push(kind);
      extras.set(at, list);
    }
  };
  place(withdrawals, 'withdrawal');
  place(strays, 'stray');
  return { status, problem, proofs, extras, withdrawals, strays };
}

// ---------------------------------------------------------------------------------------------
// Generation of one batch: rows for the fact tables, and the rules' entry drafts.

interface PendingEntry {
  draft: EntryDraft;
  recordedAt: Date;
}

interface Batch {
  intents: string[];
  transfers: string[];
  webhooks: string[];
  findings: string[];
  entries: PendingEntry[];
}

interface FillGenerator {
  batch(lo: number, hi: number): Batch;
  /** A few drafts to post again through postEntry after the fill: each must be an idempotent replay. */
  samples: EntryDraft[];
  /** Block of the last transfer written. */
  lastBlock(): bigint;
}

function createGenerator(plan: Plan, from: Date, to: Date): FillGenerator {
  const rnd = mulberry32(2);
  const span = to.getTime() - from.getTime() - TAIL_MS;
  const blockAt = (ms: number) => FIRST_BLOCK + BigInt(Math.floor((ms - from.getTime()) / BLOCK_MS));
  const blockTime = (block: bigint) => new Date(from.getTime() + Number(block - FIRST_BLOCK) * BLOCK_MS);
  let hashOf: { block: bigint; hash: `0x${string}` } = { block: -1n, hash: '0x' };
  const blockHash = (block: bigint) => {
    if (hashOf.block !== block) hashOf = { block, hash: `0x${hex(`bench:block:${block}`)}` };
    return hashOf.hash;
  };
  /** Merchant-wallet balance per token from the transfers generated so far (bounds withdrawals). */
  const wallet = new Map<string, bigint>(TOKENS.map((t) => [t.address, 0n]));
  let pendingWithdrawals = 0;
  let extraSeq = 0;
  let last = FIRST_BLOCK;
  const samples: EntryDraft[] = [];
  const wantSample = new Set(['checkout.confirmed', 'chain.payment_proven', 'chain.transfer_out_unmatched']);

  const transferRow = (
    fact: ChainTransferFact,
    matchedAs: string,
    matchedRef: string | null,
    finalAt: Date,
  ): string => {
    if (fact.blockNumber > last) last = fact.blockNumber;
    return csvRow([
      CHAIN_ID,
      fact.txHash,
      fact.logIndex,
      fact.blockNumber,
      fact.blockHash,
      fact.occurredAt,
      fact.tokenAddress,
      fact.from,
      fact.to,
      fact.amount,
      'final',
      'logs',
      new Date(fact.occurredAt.getTime() + 2500),
      finalAt,
      STORE_ID,
      matchedAs,
      matchedRef,
      new Date(finalAt.getTime() + 800),
    ]);
  };
  const findingRow = (f: FindingDraft, seenAt: Date, acked: string | null) =>
    csvRow([
      f.kind,
      f.severity,
      STORE_ID,
      f.ref.type,
      f.ref.id,
      json(f.details),
      seenAt,
      seenAt,
      acked === null ? null : new Date(seenAt.getTime() + 6 * 3_600_000),
      acked,
    ]);
  const keep = (out: Batch, draft: EntryDraft | null, recordedAt: Date) => {
    if (!draft) throw new Error('a posting rule booked nothing for a fact the bench meant to be clean');
    out.entries.push({ draft, recordedAt });
    if (wantSample.delete(draft.kind)) samples.push(draft);
  };

  /** An owner withdrawal out of the merchant wallet, or a stray deposit into it (rule 9). */
  const extra = (out: Batch, kind: 'withdrawal' | 'stray', afterMs: number): boolean => {
    const preferred = rnd() < 0.7 ? USDC : USDT;
    const other = preferred === USDC ? USDT : USDC;
    const token = kind === 'withdrawal' && (wallet.get(preferred.address) ?? 0n) < 2n ? other : preferred;
    const balance = wallet.get(token.address) ?? 0n;
    const wanted = BigInt(10 + Math.floor(rnd() * 2000)) * 1_000_000n;
    const amount =
      kind === 'stray'
        ? BigInt(1 + Math.floor(rnd() * 50)) * 100_000n
        : wanted < balance / 2n
          ? wanted
          : balance / 2n;
    if (amount === 0n) return false;
    wallet.set(token.address, kind === 'stray' ? balance + amount : balance - amount);
    const seq = extraSeq++;
    const block = blockAt(afterMs + 20 * 60_000 + Math.floor(rnd() * 10 * 60_000));
    const fact: ChainTransferFact = {
      chainId: CHAIN_ID,
      txHash: `0x${hex(`bench:extra:${seq}`)}`,
      logIndex: Math.floor(rnd() * 40),
      blockNumber: block,
      blockHash: blockHash(block),
      tokenAddress: token.address,
      from: kind === 'stray' ? address(`bench:stranger:${seq}`) : MERCHANT,
      to: kind === 'stray' ? MERCHANT : OWNER,
      amount,
      occurredAt: blockTime(block),
    };
    const finalAt = new Date(fact.occurredAt.getTime() + 15 * 60_000);
    const outcome = unmatchedTransfer({
      storeId: STORE_ID,
      transfer: fact,
      token,
      wallet: { address: MERCHANT, role: 'merchant' },
    });
    keep(out, outcome.entry, new Date(finalAt.getTime() + 800));
    const direction = kind === 'stray' ? 'transfer_in_unmatched' : 'transfer_out_unmatched';
    out.transfers.push(transferRow(fact, direction, null, finalAt));
    for (const f of outcome.findings)
      out.findings.push(findingRow(f, finalAt, kind === 'withdrawal' ? 'owner withdrawal' : null));
    return true;
  };

  /** The withdrawals and stray deposits placed after intent i (a withdrawal waits for money to withdraw). */
  const extrasAfter = (out: Batch, i: number, createdMs: number) => {
    for (const kind of plan.extras.get(i) ?? []) {
      if (kind === 'withdrawal') pendingWithdrawals++;
      else if (!extra(out, 'stray', createdMs)) throw new Error('a stray deposit booked nothing');
    }
    while (pendingWithdrawals > 0 && extra(out, 'withdrawal', createdMs)) pendingWithdrawals--;
  };

  const batch = (lo: number, hi: number): Batch => {
    const out: Batch = { intents: [], transfers: [], webhooks: [], findings: [], entries: [] };
    for (let i = lo; i < hi; i++) {
      const createdMs = from.getTime() + Math.floor(((i + rnd()) * span) / INTENTS);
      const created = new Date(createdMs);
      const h = hex(`bench:intent:${i}`);
      const id = `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
      const token = rnd() < 0.7 ? USDC : USDT;
      const cents = BigInt(100 + Math.floor(rnd() * 50_000));
      const R = cents * 10_000n;
      const status = plan.status[i] ?? CheckoutStatus.CREATED;
      const problem = plan.problem[i] ?? Problem.none;
      const orderId = `order-${i}`;
      const userId = `user-${Math.floor(rnd() * 200_000)}`;
      if (status !== CheckoutStatus.CONFIRMED) {
        const terminal = status < 0;
        const changed = terminal ? new Date(createdMs + 20 * 60_000) : created;
        out.intents.push(
          csvRow([
            id,
            STORE_ID,
            1,
            '$',
            cents,
            CHAIN_ID,
            formatDecimalAmount(R, 6),
            token.symbol,
            token.address,
            '1',
            status,
            orderId,
            `Order ${i}`,
            userId,
            null,
            terminal ? 'payment not completed' : null,
            null,
            null,
            null,
            null,
            null,
            null,
            null,
            null,
            null,
            null,
            'created',
            created,
            changed,
            null,
            terminal ? 'poll' : null,
            changed,
            terminal ? 6 : 2,
            changed,
          ]),
        );
        extrasAfter(out, i, createdMs);
        continue;
      }
      const roll = rnd();
      const P =
        roll < 0.005
          ? R - (R * BigInt(1 + Math.floor(rnd() * 50))) / 1000n
          : roll < 0.01
            ? R + (R * BigInt(1 + Math.floor(rnd() * 50))) / 1000n
            : R;
      const direct = rnd() < 0.1;
      const F = direct ? 0n : P / 100n;
      const N = P - F;
      const txHash = `0x${hex(`bench:tx:${i}`)}` as `0x${string}`;
      const txHash2 = direct ? null : (`0x${hex(`bench:tx2:${i}`)}` as `0x${string}`);
      const buyer = `0x${txHash.slice(26)}` as `0x${string}`;
      const block = blockAt(createdMs + 30_000 + Math.floor(rnd() * 9 * 60_000));
      const mined = blockTime(block);
      const receivedAt = new Date(mined.getTime() + 3000 + Math.floor(rnd() * 17_000));
      const confirmedAt = new Date(receivedAt.getTime() + 40);
      const paid = formatDecimalAmount(P, 6);
      const fee = formatDecimalAmount(F, 6);
      const net = formatDecimalAmount(N, 6);
      const viaWebhook = problem !== Problem.noWebhook;
      out.intents.push(
        csvRow([
          id,
          STORE_ID,
          1,
          '$',
          cents,
          CHAIN_ID,
          formatDecimalAmount(R, 6),
          token.symbol,
          token.address,
          '1',
          CheckoutStatus.CONFIRMED,
          orderId,
          `Order ${i}`,
          userId,
          null,
          null,
          txHash,
          txHash2,
          buyer,
          MERCHANT,
          paid,
          fee,
          net,
          direct ? 2 : 3,
          null,
          null,
          viaWebhook ? 'webhook' : 'created',
          viaWebhook ? receivedAt : created,
          confirmedAt,
          confirmedAt,
          viaWebhook ? 'webhook' : 'poll',
          viaWebhook ? null : confirmedAt,
          viaWebhook ? 0 : 3,
          confirmedAt,
        ]),
      );
      const rule1 = checkoutConfirmed({
        storeId: STORE_ID,
        intentId: id,
        occurredAt: confirmedAt,
        token,
        amountCoins: formatDecimalAmount(R, 6),
        actualPaidAmount: paid,
        serviceFeeAmount: fee,
        netIncomeAmount: net,
        fiat: { amountCents: cents, currency: 1, currencyRate: '1' },
        txHash,
        txHash2,
      });
      keep(out, rule1.entry, new Date(confirmedAt.getTime() + 5));
      for (const f of rule1.findings) out.findings.push(findingRow(f, confirmedAt, null));
      if (viaWebhook) {
        const webhookId = `whk_${h.slice(32, 56)}`;
        const webhookPaid = problem === Problem.webhookAmount ? formatDecimalAmount(P + 10_000n, 6) : paid;
        const body = json({
          all_svc_transaction_id: `tr_${h.slice(40, 64)}`,
          all_svc_checkout_intent_id: id,
          webhook_id: webhookId,
          amount_cents: Number(cents),
          currency: 1,
          currency_symbol: '$',
          amount_coins: formatDecimalAmount(R, 6),
          coin_contract_address: token.address,
          coin_symbol: token.symbol,
          chain_id: CHAIN_ID,
          tx_hash: txHash,
          tx_from: buyer,
          payment_method_type: direct ? 2 : 3,
          user_id: userId,
          order_id: orderId,
          user_name: null,
          extra_obj: null,
          status: CheckoutStatus.CONFIRMED,
          actual_paid_amount: webhookPaid,
        });
        const headers = json({
          'content-type': 'application/json',
          'x-api-key': 'pk_bench',
          'x-webhook-id': webhookId,
          'x-timestamp': String(Math.floor(receivedAt.getTime() / 1000)),
        });
        out.webhooks.push(
          csvRow([
            webhookId,
            STORE_ID,
            'checkout',
            'processed',
            headers,
            `\\x${Buffer.from(body).toString('hex')}`,
            receivedAt,
            confirmedAt,
            1,
            id,
            webhookPaid,
          ]),
        );
      }
      if (problem !== Problem.noTransfer) {
        const fact: ChainTransferFact = {
          chainId: CHAIN_ID,
          txHash: txHash2 ?? txHash,
          logIndex: Math.floor(rnd() * 60),
          blockNumber: block,
          blockHash: blockHash(block),
          tokenAddress: token.address,
          from: direct ? buyer : (`0x${(txHash2 ?? txHash).slice(26)}` as `0x${string}`),
          to: MERCHANT,
          amount: N,
          occurredAt: mined,
        };
        const finalAt = new Date(mined.getTime() + 15 * 60_000);
        const proof = paymentProven({
          storeId: STORE_ID,
          intentId: id,
          transfer: fact,
          token,
          expected: { token, recipient: MERCHANT, amount: N },
        });
        keep(out, proof.entry, new Date(finalAt.getTime() + 800));
        out.transfers.push(transferRow(fact, 'payment_proof', id, finalAt));
        wallet.set(token.address, (wallet.get(token.address) ?? 0n) + N);
      }
      extrasAfter(out, i, createdMs);
    }
    if (hi === INTENTS && pendingWithdrawals > 0)
      log(`  ${pendingWithdrawals} withdrawal(s) left out: the wallet had nothing to withdraw`);
    return out;
  };
  return { batch, samples, lastBlock: () => last };
}

// ---------------------------------------------------------------------------------------------
// The fill.

/** Every account the fill books to, created through ensureAccounts as the poster would. */
async function fillAccounts(db: Db): Promise<Map<string, ResolvedAccount>> {
  const kinds = [
    'assets:in_transit',
    'assets:wallet',
    'assets:suspense',
    'income:sales',
    'expense:service_fees',
    'expense:sales_shortfall',
    'liability:customer_overpayments',
    'equity:owner_transfers',
  ] as const;
  const refs: AccountRef[] = TOKENS.flatMap((t) => kinds.map((k) => account(k, STORE_ID, t)));
  return ensureAccounts(db, refs);
}

/** The content hash postEntry computes for a draft. */
function draftHash(draft: EntryDraft): string {
  return contentHash({
    kind: draft.kind,
    occurredAt: draft.occurredAt,
    storeId: draft.storeId,
    ref: draft.ref,
    memo: draft.memo ?? null,
    metadata: draft.metadata ?? {},
    lines: draft.lines
      .map((l) => [accountCode(l.account), assetOf(l.account.token), l.amount.toString()])
      .sort((a, b) => (a.join('|') < b.join('|') ? -1 : 1)),
  });
}

function* chunks(lines: Iterable<string>, per = 1000): Generator<string> {
  let buffer: string[] = [];
  for (const line of lines) {
    buffer.push(line);
    if (buffer.length >= per) {
      yield buffer.join('');
      buffer = [];
    }
  }
  if (buffer.length > 0) yield buffer.join('');
}

async function copyInto(client: pg.PoolClient, table: string, columns: string[], lines: Iterable<string>) {
  const stream = client.query(copyFrom(`copy ${table} (${columns.join(', ')}) from stdin with (format csv)`));
  await pipeline(Readable.from(chunks(lines)), stream);
  return stream.rowCount;
}

const INTENT_COLUMNS = [
  'id',
  'store_id',
  'currency',
  'currency_symbol',
  'amount_cents',
  'chain_id',
  'amount_coins',
  'coin_symbol',
  'coin_contract',
  'currency_rate',
  'status',
  'order_id',
  'order_description',
  'user_id',
  'user_name',
  'error_message',
  'tx_hash',
  'tx_hash_2',
  'tx_from',
  'tx_to',
  'actual_paid_amount',
  'service_fee_amount',
  'net_income_amount',
  'payment_method_type',
  'accepted_stable_coins',
  'raw_payload',
  'tracked_via',
  'tracked_at',
  'status_changed_at',
  'confirmed_at',
  'settled_by',
  'last_polled_at',
  'poll_count',
  'updated_at',
];
const TRANSFER_COLUMNS = [
  'chain_id',
  'tx_hash',
  'log_index',
  'block_number',
  'block_hash',
  'block_time',
  'token',
  'from_address',
  'to_address',
  'value',
  'state',
  'source',
  'found_at',
  'final_at',
  'store_id',
  'matched_as',
  'matched_ref',
  'applied_at',
];
const FINDING_COLUMNS = [
  'kind',
  'severity',
  'store_id',
  'ref_type',
  'ref_id',
  'details',
  'first_seen_at',
  'last_seen_at',
  'acked_at',
  'ack_note',
];
const ENTRY_COLUMNS = [
  'id',
  'idempotency_key',
  'kind',
  'occurred_at',
  'recorded_at',
  'store_id',
  'ref_type',
  'ref_id',
  'metadata',
  'content_hash',
];
const POSTING_COLUMNS = ['entry_id', 'account_id', 'asset', 'amount', 'occurred_at'];

interface FillResult {
  seconds: number;
  rows: number;
  samples: EntryDraft[];
}

async function fill(db: Db, pool: pg.Pool, from: Date, to: Date): Promise<FillResult> {
  const webhookColumns = [
    'webhook_id',
    'store_id',
    'endpoint',
    'status',
    'headers',
    'body',
    'received_at',
    'processed_at',
    'attempts',
    'ref_id',
    'actual_paid_amount',
  ];

  const t0 = performance.now();
  const plan = makePlan();
  log(
    `plan: ${fmt(INTENTS)} intents, ${fmt(plan.proofs)} payment transfers, ${fmt(plan.withdrawals)} withdrawals, ` +
      `${fmt(plan.strays)} stray deposits (${fmt(plan.proofs + plan.withdrawals + plan.strays)} transfers)`,
  );
  const accounts = await fillAccounts(db);
  const gen = createGenerator(plan, from, to);
  const { rows: seqRows } = await db.execute<{ seq: string }>(
    sql`select pg_get_serial_sequence('ledger_entries', 'id') as seq`,
  );
  const seq = seqRows[0]?.seq;
  if (!seq) throw new Error('ledger_entries.id has no sequence');

  const client = await pool.connect();
  // A server stopped under the fill (Ctrl-C) fails the COPY in progress; without a listener the
  // connection's 'error' event would crash the process before the clean-ups finish.
  client.on('error', () => {});
  let rows = 0;
  try {
    for (let lo = 0; lo < INTENTS; lo += BATCH) {
      if (interrupted) throw new Error('interrupted');
      const hi = Math.min(INTENTS, lo + BATCH);
      const b0 = performance.now();
      const batch = gen.batch(lo, hi);
      const genMs = performance.now() - b0;
      await client.query('begin');
      try {
        const n = batch.entries.length;
        const first = BigInt(
          (await client.query<{ id: string }>(`select nextval($1)::text as id`, [seq])).rows[0]?.id ?? '0',
        );
        // Reserves ids first .. first + n - 1 for this batch's entries (the bench is the only writer).
        if (n > 1)
          await client.query('select setval($1, $2::bigint)', [seq, (first + BigInt(n) - 1n).toString()]);
        const entryLines = function* () {
          let id = first;
          for (const { draft, recordedAt } of batch.entries) {
            yield csvRow([
              id,
              draft.idempotencyKey,
              draft.kind,
              draft.occurredAt,
              recordedAt,
              draft.storeId,
              draft.ref.type,
              draft.ref.id,
              json(draft.metadata ?? {}),
              draftHash(draft),
            ]);
            id++;
          }
        };
        const postingLines = function* () {
          let id = first;
          for (const { draft } of batch.entries) {
            for (const line of draft.lines) {
              const code = accountCode(line.account);
              const acct = accounts.get(code);
              if (!acct) throw new Error(`account ${code} was not created`);
              yield csvRow([id, acct.id, acct.asset, line.amount, draft.occurredAt]);
            }
            id++;
          }
        };
        rows += await copyInto(client, 'ledger_entries', ENTRY_COLUMNS, entryLines());
        rows += await copyInto(client, 'ledger_postings', POSTING_COLUMNS, postingLines());
        rows += await copyInto(client, 'checkout_intents', INTENT_COLUMNS, batch.intents);
        rows += await copyInto(client, 'chain_transfers', TRANSFER_COLUMNS, batch.transfers);
        rows += await copyInto(client, 'webhook_inbox', webhookColumns, batch.webhooks);
        rows += await copyInto(client, 'findings', FINDING_COLUMNS, batch.findings);
        await client.query('commit');
      } catch (err) {
        await client.query('rollback').catch(() => {});
        throw err;
      }
      const elapsed = (performance.now() - t0) / 1000;
      log(
        `  fill: ${fmt(hi)}/${fmt(INTENTS)} intents, ${fmt(rows)} rows, ${fmt(rows / elapsed)} rows/s overall ` +
          `(batch ${((performance.now() - b0) / 1000).toFixed(1)} s, of which generating ${(genMs / 1000).toFixed(1)} s)`,
      );
    }
  } finally {
    client.release();
  }
  // Where the indexer stands: the period's end, final.
  const head = FIRST_BLOCK + BigInt(Math.floor((to.getTime() - from.getTime()) / BLOCK_MS));
  const top = head > gen.lastBlock() ? head : gen.lastBlock();
  await db.execute(sql`
    insert into chain_cursors (chain_id, block_number, block_hash, head_block, finalized_block)
    values (${CHAIN_ID}, ${top.toString()}::bigint, ${`0x${hex(`bench:block:${top}`)}`}, ${top.toString()}::bigint,
            ${top.toString()}::bigint)
    on conflict (chain_id) do nothing`);
  return { seconds: (performance.now() - t0) / 1000, rows, samples: gen.samples };
}

// ---------------------------------------------------------------------------------------------
// Checks of the filled data.

async function checkFill(db: Db, samples: EntryDraft[]): Promise<void> {
  const { rows: counts } = await db.execute<Record<string, string>>(sql`
    select (select count(*) from checkout_intents where store_id = ${STORE_ID})::text as intents,
           (select count(*) from checkout_intents where store_id = ${STORE_ID} and status = 20)::text as confirmed,
           (select count(*) from chain_transfers where store_id = ${STORE_ID})::text as transfers,
           (select count(*) from webhook_inbox where store_id = ${STORE_ID})::text as webhooks,
           (select count(*) from findings where store_id = ${STORE_ID})::text as findings,
           (select count(*) from ledger_entries where store_id = ${STORE_ID})::text as entries,
           (select count(*) from ledger_postings)::text as postings`);
  log(
    `rows: ${Object.entries(counts[0] ?? {})
      .map(([k, v]) => `${k} ${fmt(Number(v))}`)
      .join(', ')}`,
  );

  const { rows: trial } = await db.execute<{ asset: string; total: string; postings: string }>(sql`
    select asset, sum(amount)::text as total, count(*)::text as postings from ledger_postings group by asset order by asset`);
  for (const r of trial) log(`trial balance ${r.asset}: ${r.total} over ${fmt(Number(r.postings))} postings`);
  if (trial.some((r) => r.total !== '0')) throw new Error('the trial balance is not zero');

  // The merchant wallet: its ledger account against the final transfers into and out of it.
  const { rows: walletRows } = await db.execute<{ symbol: string; ledger: string; chain: string }>(sql`
    with ledger as (
      select a.token, a.symbol, sum(p.amount) as balance
      from ledger_accounts a join ledger_postings p on p.account_id = a.id
      where a.code like ${`assets:wallet:${STORE_ID}:%`} group by a.token, a.symbol
    ), chain as (
      select token, sum(case when to_address = ${MERCHANT} then value else -value end) as balance
      from chain_transfers
      where chain_id = ${CHAIN_ID} and state = 'final' and (to_address = ${MERCHANT} or from_address = ${MERCHANT})
      group by token
    )
    select l.symbol, l.balance::text as ledger, coalesce(c.balance, 0)::text as chain
    from ledger l left join chain c using (token) order by l.symbol`);
  for (const r of walletRows) {
    log(`merchant wallet ${r.symbol}: ledger ${r.ledger}, transfers ${r.chain}`);
    if (r.ledger !== r.chain)
      throw new Error(`the merchant wallet's ledger balance (${r.symbol}) disagrees with its transfers`);
  }
  const { rows: inTransit } = await db.execute<{ symbol: string; balance: string }>(sql`
    select a.symbol, sum(p.amount)::text as balance
    from ledger_accounts a join ledger_postings p on p.account_id = a.id
    where a.code like ${`assets:in_transit:${STORE_ID}:%`} group by a.symbol order by a.symbol`);
  log(
    `in transit (confirmed, no chain proof): ${inTransit.map((r) => `${r.symbol} ${r.balance}`).join(', ')}`,
  );

  // The rules' entries as postEntry writes them: posting them again must be a replay, not a conflict.
  await db.transaction(async (tx) => {
    for (const draft of samples) {
      const posted = await postEntry(tx, draft);
      if (posted.created) throw new Error(`entry ${draft.idempotencyKey} was not in the ledger`);
    }
  });
  log(
    `postEntry replays ${samples.map((d) => d.kind).join(', ')} as existing entries: the fill matches the rules`,
  );
}

async function databaseSize(db: Db): Promise<string> {
  const { rows } = await db.execute<{ size: string }>(
    sql`select pg_size_pretty(pg_database_size(current_database())) as size`,
  );
  return rows[0]?.size ?? '?';
}

// ---------------------------------------------------------------------------------------------
// The run, in a child process.

const ALL_FORMATS: readonly ReportFormat[] = ['json', 'csv', 'md', 'html'];
const FORMATS: ReportFormat[] = (process.env.BENCH_FORMATS ?? ALL_FORMATS.join(','))
  .split(',')
  .map((f) => f.trim())
  .filter((f): f is ReportFormat => (ALL_FORMATS as readonly string[]).includes(f));

async function runInChild(
  url: string,
  dir: string,
  from: Date,
  to: Date,
  cleanups: Cleanups,
): Promise<ChildReport> {
  const storesFile = join(dir, 'stores.json');
  writeFileSync(
    storesFile,
    JSON.stringify([
      {
        store_id: STORE_ID,
        business_id: 'biz_bench',
        api_key: 'pk_bench',
        api_secret_env: 'SVC_SECRET_ST_BENCH',
        wallets: { [String(CHAIN_ID)]: { merchant: MERCHANT, custody: CUSTODY } },
      },
    ]),
  );
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.tmpdir(),
    DATABASE_URL: url,
    REDIS_URL: 'redis://127.0.0.1:9',
    SVC_BASE_URL: 'http://127.0.0.1:9',
    STORES_FILE: storesFile,
    SVC_SECRET_ST_BENCH: 'bench-secret-not-used-0123456789',
    // Required by the config for a store with wallets on 8453; never called (rpcs is empty).
    [`RPC_URL_${CHAIN_ID}`]: 'http://127.0.0.1:9',
    ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    REPORTS_DIR: join(dir, 'reports'),
    LOG_LEVEL: 'warn',
    BENCH_FROM: from.toISOString(),
    BENCH_TO: to.toISOString(),
    BENCH_OUT_DIR: join(dir, 'reports'),
    BENCH_FORMATS: FORMATS.join(','),
    BENCH_STORE_ID: STORE_ID,
  };
  const child: ChildProcess = fork(fileURLToPath(new URL('./reconChild.ts', import.meta.url)), [], {
    env,
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return new Promise<ChildReport>((resolve, reject) => {
    let report: ChildReport | undefined;
    child.on('message', (m: unknown) => {
      report = m as ChildReport;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (report) resolve(report);
      else reject(new Error(`the reconciliation process exited (${signal ?? code}) without a result`));
    });
  });
}

// ---------------------------------------------------------------------------------------------

/**
 * A clean-up that runs once even when called twice: on Ctrl-C, runBench's signal handler and the
 * interrupted fill's `finally` both run the clean-ups.
 */
function once(fn: () => Promise<unknown>): () => Promise<unknown> {
  let done: Promise<unknown> | undefined;
  return () => {
    done ??= fn();
    return done;
  };
}

const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
const mb = (bytes: number) => `${fmt(bytes / 2 ** 20, 1)} MB`;
const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');

async function run(cleanups: Cleanups): Promise<void> {
  const dir = mkdtempSync(join(os.tmpdir(), 'stablebooks-bench-recon-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  let url = process.env.DATABASE_URL;
  if (url) {
    log('using DATABASE_URL (a scratch database: the bench rows stay in it)');
  } else {
    log('starting a durable ephemeral PostgreSQL (fsync, synchronous_commit, full_page_writes on)');
    const server = await startEphemeralPostgres({ durable: true });
    cleanups.push(once(() => server.stop()));
    url = server.url;
  }
  await runMigrations(url);
  const database = createDatabase(url, { max: 2, applicationName: 'stablebooks-bench-fill' });
  // A fill interrupted by Ctrl-C still holds a connection, which pool.end() would wait for: the
  // server's stop (next clean-up) ends that connection instead.
  cleanups.push(once(() => Promise.race([database.close(), sleep(1000)])));
  const { db } = database;
  const { rows: existing } = await db.execute<{ n: number }>(
    sql`select count(*)::int as n from checkout_intents where store_id = ${STORE_ID}`,
  );
  const reuse = (existing[0]?.n ?? 0) > 0;
  if (reuse && !REUSE)
    throw new Error(
      `the database already holds intents of ${STORE_ID}: point DATABASE_URL at an empty scratch database, or set BENCH_REUSE=1 to run on it`,
    );

  const { from, to } = period();
  const cpus = os.cpus();
  log(
    `machine: ${cpus.length} x ${cpus[0]?.model.trim() ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}`,
  );
  log(`load average at start (1/5/15 min): ${loadAverage()}`);
  log(
    `period ${from.toISOString()} .. ${to.toISOString()}; ${fmt(INTENTS)} intents, ${fmt(TRANSFERS)} transfers`,
  );

  let filled = { rows: 0, seconds: 0 };
  let vacuumSeconds = 0;
  if (reuse) {
    log(
      `BENCH_REUSE=1: the database already holds ${fmt(existing[0]?.n ?? 0)} intents of ${STORE_ID}; no fill`,
    );
  } else {
    const result = await fill(db, database.pool, from, to);
    filled = result;
    log(
      `fill: ${fmt(filled.rows)} rows in ${filled.seconds.toFixed(1)} s (${fmt(filled.rows / filled.seconds)} rows/s)`,
    );
    let t0 = performance.now();
    await db.execute(sql`vacuum (analyze)`);
    vacuumSeconds = (performance.now() - t0) / 1000;
    log(`vacuum (analyze), as autovacuum would: ${vacuumSeconds.toFixed(1)} s`);
    t0 = performance.now();
    await checkFill(db, result.samples);
    log(`checks: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const size = await databaseSize(db);
  log(`database size: ${size}`);
  if (FILL_ONLY) {
    log('BENCH_FILL_ONLY=1: no reconciliation run');
    return;
  }

  log('reconciliation run (child process; rpcs empty, so the balance proofs fail with a reason)');
  const r = await runInChild(url, dir, from, to, cleanups);
  if (!r.ok) throw new Error(`reconciliation run failed: ${r.error ?? 'unknown error'}`);
  const wall = (r.wallMs ?? 0) / 1000;
  const peak = Math.max(r.peakRss ?? 0, r.maxRss ?? 0);
  console.log('\n## Reconciliation run\n');
  if (reuse) {
    console.log(`- data: the fill already in DATABASE_URL (BENCH_REUSE=1), database ${size}`);
  } else {
    console.log(
      `- data: ${fmt(INTENTS)} intents, ${fmt(TRANSFERS)} transfers, ${fmt(filled.rows)} rows, database ${size}`,
    );
    console.log(
      `- fill: ${filled.seconds.toFixed(1)} s (${fmt(filled.rows / filled.seconds)} rows/s), vacuum ${vacuumSeconds.toFixed(1)} s`,
    );
  }
  console.log(
    `- run ${r.runId ?? '?'}: status ${r.status ?? '?'}, passed ${String(r.passed)}, its own durationMs ${fmt(r.durationMs ?? 0)}`,
  );
  console.log(
    `- wall time: ${wall.toFixed(2)} s (target < ${TARGET_SECONDS} s): ${verdict(wall < TARGET_SECONDS)}`,
  );
  console.log(
    `- peak RSS: sampled ${mb(r.peakRss ?? 0)}, maxRSS ${mb(r.maxRss ?? 0)}, ${mb(r.rssBefore ?? 0)} before the run ` +
      `(target < ${TARGET_RSS_MB} MB): ${verdict(peak < TARGET_RSS_MB * 2 ** 20)}`,
  );
  console.log('\n| phase | seconds | done | total |\n| --- | --- | --- | --- |');
  for (const p of r.phases ?? [])
    console.log(`| ${p.phase} | ${(p.ms / 1000).toFixed(2)} | ${fmt(p.done)} | ${fmt(p.total)} |`);
  console.log('\n| file | bytes | sha256 |\n| --- | --- | --- |');
  for (const f of r.files ?? [])
    console.log(`| ${f.path.split('/').pop() ?? f.path} | ${fmt(f.bytes)} | ${f.sha256.slice(0, 16)}… |`);
  console.log(
    `- load average at the end (1/5/15 min): ${loadAverage()} (the machine is shared: figures are noisy)`,
  );
  log(`database size after the run: ${await databaseSize(db)}`);
}

// runBench undoes everything on Ctrl-C; a SIGTERM gets the same clean-up.
process.once('SIGTERM', () => process.kill(process.pid, 'SIGINT'));
process.once('SIGINT', () => {
  interrupted = true;
});
runBench(run).catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
