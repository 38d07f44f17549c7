import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { BaseError } from 'viem';
import { type Clock, systemClock } from '../clock.ts';
import { type ChainInfo, finalBlockOf } from '../config/chainRegistry.ts';
import type { Config } from '../config/loadConfig.ts';
import type { Db } from '../db/database.ts';
import { coerceError } from '../errors/coerceError.ts';
import type { Logger } from '../logging/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { bigintMin } from '../money/bigintMin.ts';
import { type BlockHeader, getBlockHeader } from './blockHeaders.ts';
import { catchUpPools } from './catchUpPools.ts';
import { type ChainCursor, readCursor, writeCursor, writeCursorHead } from './chainCursor.ts';
import { applyReorg, checkForReorg } from './detectReorg.ts';
import { finalizeTransfers } from './finalizeTransfers.ts';
import { createLogRangeState, type LogRangeState, readAdaptiveRange } from './getLogsAdaptive.ts';
import { tryIndexerLock } from './indexerLock.ts';
import { ReadStopped, readTransferRange } from './readTransferRange.ts';
import { loadReceiptRows, recheckReceiptRows } from './receiptRecheck.ts';
import { ReceiptBlockUnavailableError } from './receiptTransfers.ts';
import type { ChainRpc } from './rpcClients.ts';
import { storeTransfers } from './storeTransfers.ts';
import { watchedWallets } from './watchedWallets.ts';

/**
 * The transfer indexer: one pass over one chain (docs/accounting.md, "Payments, payouts and the chain"). A pass, under a per-chain
 * advisory lock so only one runs at a time across processes:
 * 1. reads the head block, the final block (the `finalized` tag, or head - depth) and the block at
 *    the cursor's height, in one batch;
 * 2. checks the cursor's hash (and the few stored hashes it does not vouch for) for a reorg
 *    (detectReorg.ts) and, when one is confirmed, orphans the transfers of the replaced blocks and
 *    rewinds the cursor;
 * 3. reads the Transfer logs of the accepted tokens into or out of the watched wallets from the
 *    cursor up to the head, range by range (getLogsAdaptive.ts, readTransferRange.ts); each
 *    range's rows and the cursor move commit together, so progress survives a crash; a pass does a
 *    bounded amount of work and a backfill continues over the next passes. A head that has not
 *    moved costs nothing more. Blocks first read above the final block are read once more when
 *    they have become final (see "verified", below);
 * 4. catches up claim-link pools learnt since (their history from `from_block` to the cursor);
 * 5. marks pending transfers at or below the final block `final` (finalizeTransfers.ts).
 * RPC trouble never throws out of a pass: it ends with an outcome saying why (`skipped`).
 *
 * Glossary
 * - cursor: the last block whose logs are stored, with its hash (chain_cursors);
 * - head: the node's latest block; final block: the highest block that cannot be replaced;
 * - lag: head - cursor, in blocks;
 * - verified block: every block up to it had its logs read while final (chainCursor.ts). A node
 *   can answer eth_getLogs near the head with logs missing (a lagging fallback, or one node behind
 *   a load balancer) while the end block's hash checks out; the re-read at finality finds them,
 *   and they are stored, made final and booked like any other new transfer. The re-read starts
 *   the next range at the verified block and runs on into the new blocks when one request can hold
 *   both (the steady state: no request more, only a wider one); a range read of blocks already
 *   final is never read again.
 */
export interface IndexerDeps {
  db: Db;
  /** The pool behind `db`: the advisory lock needs one connection for the whole pass. */
  pool: pg.Pool;
  config: Pick<Config, 'stores' | 'chains'>;
  rpc: ChainRpc;
  metrics: Metrics;
  logger: Logger;
  clock?: Clock;
}

export interface IndexPassLimits {
  /** getLogs ranges per pass, re-reads of final blocks included (each one or two requests). Default 20. */
  maxRanges?: number;
  /** Wall time after which no new range starts. Default 10 s. */
  maxMillis?: number;
  /** First range size and largest range size. Defaults 2,000 and 50,000 blocks. */
  initialRange?: bigint;
  maxRange?: bigint;
  /** How far below the head a first run starts when the registry has no start block. Default 10,000. */
  firstRunBlocks?: bigint;
}

export type SkipReason = 'locked' | 'node_behind' | 'node_disagreement' | 'rpc_error';

export interface IndexOutcome {
  skipped?: SkipReason;
  /** The block range read this pass (null when none was). */
  fromBlock: bigint | null;
  toBlock: bigint | null;
  /** Transfer rows newly stored (logs and pool catch-up). */
  transfersFound: number;
  /** Of those, rows the re-read of final blocks found that their first read had missed. */
  recovered: number;
  finalized: number;
  orphaned: number;
  reorgDepth?: number;
  /** head - cursor after the pass; null when unknown. */
  lag: number | null;
  /** Why reading stopped early (an RPC error, redacted of URLs). */
  error?: string;
}

const PROGRESS_EVERY_MS = 5_000;
/** A pass that starts this far behind the head is a backfill: it logs its progress. */
const BACKFILL_THRESHOLD = 100n;

/** State that outlives a pass, per chain client: the learnt getLogs range and the progress log's pace. */
interface IndexerMemory {
  range: LogRangeState;
  lastProgressLogAt: number;
}
const memory = new WeakMap<ChainRpc, IndexerMemory>();

function memoryOf(rpc: ChainRpc, limits: IndexPassLimits): IndexerMemory {
  let m = memory.get(rpc);
  if (!m) {
    m = {
      range: createLogRangeState({ initial: limits.initialRange, max: limits.maxRange }),
      lastProgressLogAt: 0,
    };
    memory.set(rpc, m);
  }
  return m;
}

export async function indexChainPass(
  deps: IndexerDeps,
  chainId: number,
  limits: IndexPassLimits = {},
): Promise<IndexOutcome> {
  if (deps.rpc.chainId !== chainId) {
    throw new Error(`indexChainPass: the RPC client is for chain ${deps.rpc.chainId}, not chain ${chainId}`);
  }
  const info = deps.config.chains.chain(chainId);
  if (!info)
    throw new Error(`indexChainPass: chain ${chainId} is not in the chain registry; add it to CHAINS_FILE`);
  const lock = await tryIndexerLock(deps.pool, chainId);
  if (!lock) return { skipped: 'locked', ...nothingDone(null) };
  const log = deps.logger.child({ chain_id: chainId });
  try {
    return await runPass(deps, info, limits, log);
  } catch (err) {
    if (!isChainReadError(err)) throw err;
    const message = errorMessage(err);
    log.warn({ err: message }, 'indexer pass stopped: the chain could not be read');
    return { skipped: 'rpc_error', ...nothingDone(null), error: message };
  } finally {
    await lock.release();
  }
}

/** One pass's state, shared by its steps. */
interface Pass {
  deps: IndexerDeps;
  info: ChainInfo;
  limits: IndexPassLimits;
  log: Logger;
  clock: Clock;
  labels: { chain_id: string };
  head: bigint;
  /** The head block, read in one batch with the cursor's block: the first range's end when it reaches the head. */
  headHeader: BlockHeader;
  /** The chain's block at the cursor's height, read with the head (null: the node has none). */
  cursorHeader: BlockHeader | null;
  /** Whether pass.cursor is the cursor checked in that batch (false after a reorg rewound it). */
  cursorChecked: boolean;
  finalBlock: bigint;
  /** What each cursor write records besides the cursor itself. */
  seen: { headBlock: bigint; finalizedBlock: bigint };
  cursor: ChainCursor | null;
  outcome: IndexOutcome;
}

async function runPass(
  deps: IndexerDeps,
  info: ChainInfo,
  limits: IndexPassLimits,
  log: Logger,
): Promise<IndexOutcome> {
  const { db, rpc, metrics } = deps;
  const labels = { chain_id: String(info.chainId) };
  const cursor = await readCursor(db, info.chainId);
  // One batch: the head, the final block when the chain has the tag, and the cursor's block.
  const [headHeader, finalizedTag, cursorHeader] = await Promise.all([
    getBlockHeader(rpc.client, 'latest'),
    info.finality.finalizedTag ? getBlockHeader(rpc.client, 'finalized') : null,
    cursor ? getBlockHeader(rpc.client, cursor.blockNumber) : null,
  ]);
  if (!headHeader) throw new ReadStopped('the node answered no latest block', 'node_behind');
  const head = headHeader.number;
  let finalBlock = finalBlockOf(info.finality, head, finalizedTag?.number ?? 0n);
  if (finalBlock > head) finalBlock = head;
  metrics.chainHeadBlock.set(labels, Number(head));
  metrics.chainFinalizedBlock.set(labels, Number(finalBlock));
  const pass: Pass = {
    deps,
    info,
    limits,
    log,
    clock: deps.clock ?? systemClock,
    labels,
    head,
    headHeader,
    cursorHeader,
    cursorChecked: false,
    finalBlock,
    seen: { headBlock: head, finalizedBlock: finalBlock },
    cursor,
    outcome: nothingDone(cursor ? lagOf(head, cursor.blockNumber) : null),
  };
  if (cursor && cursor.blockNumber > head) {
    log.info(
      { head: String(head), cursor: String(cursor.blockNumber) },
      'node is behind the indexer; pass skipped',
    );
    return { ...pass.outcome, skipped: 'node_behind' };
  }
  // Reorg check first: nothing is read on top of blocks that left the chain.
  const skipped = await reorgStep(pass);
  if (skipped) return { ...pass.outcome, skipped };
  // Rows at or below this block had their hashes checked (or vouched for by the cursor's) this pass.
  const checkedBlock = pass.cursor?.blockNumber ?? null;

  const contracts = info.tokens.map((t) => t.address);
  const mem = memoryOf(rpc, limits);
  await readNewLogs(pass, contracts, mem);
  if (pass.cursor && !pass.outcome.skipped) {
    try {
      pass.outcome.transfersFound += await catchUpPools(
        { ...deps, logger: log },
        { contracts, cursorBlock: pass.cursor.blockNumber, range: mem.range },
      );
    } catch (err) {
      if (!isChainReadError(err)) throw err;
      log.warn({ err: errorMessage(err) }, 'pool catch-up stopped; next pass retries');
    }
  }
  await finalityStep(pass, checkedBlock);
  return pass.outcome;
}

/** Checks stored hashes; applies a confirmed reorg. Returns why the pass must stop, if it must. */
async function reorgStep(pass: Pass): Promise<SkipReason | undefined> {
  const { deps, log, labels, outcome } = pass;
  if (!pass.cursor) return undefined;
  const check = await checkForReorg(
    deps.db,
    deps.rpc,
    pass.cursor,
    pass.head,
    pass.info.reorgWindow,
    pass.cursorHeader,
  );
  switch (check.kind) {
    case 'ok':
      // The head read in one batch with the cursor's unchanged block extends it (see readNewLogs).
      pass.cursorChecked = pass.cursorHeader?.hash === pass.cursor.blockHash.toLowerCase();
      return undefined;
    case 'node_behind':
      log.info(
        { block: String(check.blockNumber) },
        'node has no block at a stored height (behind); pass skipped',
      );
      return 'node_behind';
    case 'disagreement':
      deps.metrics.chainNodeDisagreements.inc(labels);
      log.warn(
        {
          block: String(check.blockNumber),
          stored_hash: check.storedHash,
          node_hash: check.chainHash,
          urls: deps.rpc.hosts,
        },
        'RPC nodes disagree about a stored block (not treated as a reorg); pass skipped',
      );
      return 'node_disagreement';
    case 'reorg': {
      const applied = await applyReorg(
        deps.db,
        pass.info.chainId,
        check,
        pass.seen,
        pass.clock.now(),
        pass.info.finality.depth,
      );
      const orphanedRows = applied.rows;
      deps.metrics.chainReorgs.inc(labels);
      deps.metrics.chainReorgDepth.observe(labels, check.depth);
      if (applied.beyondFinality) {
        const b = applied.beyondFinality;
        deps.metrics.chainReorgsBeyondFinality.inc(labels);
        log.error(
          {
            lowest_block: String(b.lowestBlock),
            depth: b.depth,
            finality_depth: b.finalityDepth,
            final_orphaned: b.finalOrphaned,
            orphaned: b.orphaned,
          },
          'reorg beyond finality: blocks treated as final left the chain; what was booked from them is reversed and booked again from the new chain (finding reorg_beyond_finality)',
        );
      }
      outcome.orphaned += orphanedRows.length;
      outcome.reorgDepth = check.depth;
      // The verified block never passes the cursor (applyReorg's writeCursor takes it down too).
      const verifiedBlock = bigintMin(pass.cursor.verifiedBlock, check.rewindTo.blockNumber);
      pass.cursor = { ...check.rewindTo, ...pass.seen, verifiedBlock };
      log.warn(
        {
          lowest_block: String(check.lowestBlock),
          depth: check.depth,
          orphaned: orphanedRows.length,
          rewound_to: String(check.rewindTo.blockNumber),
        },
        'reorg: transfers of replaced blocks orphaned, cursor rewound',
      );
      // Verified transactions the logs may not find again (no watched wallet): follow them by receipt.
      const receiptIds = orphanedRows.filter((r) => r.source === 'receipt').map((r) => r.id.toString());
      if (receiptIds.length > 0) {
        const rows = await loadReceiptRows(deps.db, pass.info.chainId, idsIn(receiptIds));
        try {
          await recheckReceiptRows({ ...deps, registry: deps.config.chains }, rows, pass.clock.now());
        } catch (err) {
          if (!isChainReadError(err)) throw err;
          log.warn(
            { err: errorMessage(err) },
            'could not re-read receipts after a reorg; the verifier will retry',
          );
        }
      }
      return undefined;
    }
  }
}

/**
 * New logs from the cursor to the head, range by range; each range's rows and the cursor move
 * commit together. Blocks above the verified block that have become final are read first, from
 * the verified block on: in the same request as the new blocks when the range size allows,
 * else up to the final block in ranges of their own. Stops at the pass's bounds; an RPC error
 * leaves the cursor (and the verified block) where it got to.
 */
async function readNewLogs(pass: Pass, contracts: readonly string[], mem: IndexerMemory): Promise<void> {
  const { deps, info, limits, log, labels, outcome, head, finalBlock } = pass;
  const wallets = await watchedWallets(deps.db, deps.config, info.chainId, { closedPools: 'exclude' });
  const addresses = [...new Set(wallets.map((w) => w.address))];
  const firstRun = limits.firstRunBlocks ?? 10_000n;
  const origin = info.startBlock ?? (head > firstRun ? head - firstRun : 0n);
  const firstNew = pass.cursor ? pass.cursor.blockNumber + 1n : origin;
  const progressFrom = firstNew < origin ? firstNew : origin;
  const backfill = head - firstNew >= BACKFILL_THRESHOLD;
  const deadline = Date.now() + (limits.maxMillis ?? 10_000);
  const maxRanges = limits.maxRanges ?? 20;
  // No cursor yet: nothing below the origin is ours to read, so nothing there to verify.
  let verified = pass.cursor?.verifiedBlock ?? origin - 1n;
  // The head was read in one batch with the checked cursor (or there is no cursor yet): a first
  // range that ends at the head needs no new read of its end. Later ranges read theirs with the
  // previous range's end as the anchor.
  let knownEnd: BlockHeader | undefined = pass.cursorChecked || !pass.cursor ? pass.headHeader : undefined;
  let readingFrom = firstNew;
  try {
    for (let ranges = 0; ranges < maxRanges && Date.now() < deadline; ranges++) {
      const cursorBlock = pass.cursor?.blockNumber ?? origin - 1n;
      const verifyTo = bigintMin(cursorBlock, finalBlock);
      const reread = verified < verifyTo;
      const start = reread ? verified + 1n : cursorBlock + 1n;
      if (start > head) break;
      readingFrom = start;
      // A re-read too wide to share one request with the new blocks stops at the final block.
      const last = reread && head - start + 1n > mem.range.size ? verifyTo : head;
      const anchor = pass.cursor;
      const readEnd = knownEnd;
      const read = await readAdaptiveRange(mem.range, start, last, (a, b) =>
        readTransferRange(deps.rpc.client, info.chainId, contracts, addresses, a, b, {
          anchor,
          end: readEnd?.number === b ? readEnd : undefined,
        }),
      );
      knownEnd = undefined;
      const { end, facts } = read.value;
      // The range began at or below verified + 1, so verification is contiguous up to its final part.
      const readFinal = bigintMin(end.number, finalBlock);
      const nextVerified = start <= verified + 1n && readFinal > verified ? readFinal : verified;
      // A re-read that ends below the cursor leaves it where it is.
      const moved = end.number > cursorBlock;
      const next = moved || !pass.cursor ? { blockNumber: end.number, blockHash: end.hash } : pass.cursor;
      const { fresh, again } = await deps.db.transaction(async (tx) => {
        const fresh = await storeTransfers(
          tx,
          facts.filter((f) => f.blockNumber > cursorBlock),
          'logs',
        );
        // Facts in blocks read before: new rows here are what an earlier read missed.
        const again = await storeTransfers(
          tx,
          facts.filter((f) => f.blockNumber <= cursorBlock),
          'logs',
        );
        // Not the finality seen: the rows up to it are not final yet (finalityStep marks them,
        // then records it), and balance proofs are made at the recorded finalized block.
        await writeCursor(tx, info.chainId, {
          blockNumber: next.blockNumber,
          blockHash: next.blockHash,
          headBlock: pass.seen.headBlock,
          verifiedBlock: nextVerified,
        });
        return { fresh, again };
      });
      pass.cursor = { ...next, ...pass.seen, verifiedBlock: nextVerified };
      verified = nextVerified;
      outcome.fromBlock ??= start;
      if (outcome.toBlock === null || end.number > outcome.toBlock) outcome.toBlock = end.number;
      const found = fresh.length + again.length;
      outcome.transfersFound += found;
      outcome.recovered += again.length;
      deps.metrics.chainTransfersIndexed.inc(labels, found);
      deps.metrics.chainIndexedBlock.set(labels, Number(next.blockNumber));
      if (again.length > 0) {
        deps.metrics.chainTransfersRecovered.inc(labels, again.length);
        await reportRecovered(pass, again, { from: start, to: end.number });
      }
      if (backfill && moved) reportProgress(mem, log, { at: end.number, head, origin: progressFrom });
    }
  } catch (err) {
    if (err instanceof ReadStopped) {
      log.info({ reason: err.reason, err: err.message }, 'indexer stopped reading this pass');
      if (err.reason === 'node_behind') outcome.skipped = 'node_behind';
    } else if (isChainReadError(err)) {
      outcome.skipped = 'rpc_error';
      outcome.error = errorMessage(err);
      log.warn(
        { err: outcome.error, from: String(readingFrom) },
        'eth_getLogs failed; the cursor stays, next pass retries',
      );
    } else {
      throw err;
    }
  }
  if (backfill && pass.cursor && pass.cursor.blockNumber >= head) {
    log.info({ block: String(head) }, `indexed to block ${head} of ${head} (100%)`);
  }
}

/**
 * Transfers the re-read of final blocks found that their first read had missed: an RPC node
 * answered eth_getLogs incompletely. They are stored now and flow on like any new transfer; the
 * log line says which, and which URLs the chain is read through.
 */
async function reportRecovered(
  pass: Pass,
  ids: bigint[],
  range: { from: bigint; to: bigint },
): Promise<void> {
  const { rows } = await pass.deps.db.execute<{ tx_hash: string; block_number: string }>(sql`
    select tx_hash, block_number::text from chain_transfers where ${idsIn(ids.map(String))}
    order by block_number, log_index`);
  pass.log.warn(
    {
      recovered: ids.length,
      from: String(range.from),
      to: String(range.to),
      transfers: rows.map((r) => `${r.tx_hash}@${r.block_number}`),
      urls: pass.deps.rpc.hosts,
    },
    'the re-read of final blocks found transfers an earlier eth_getLogs answer had left out; stored now',
  );
}

/**
 * Pending rows at or below the final block become final; the cursor records head and finality.
 * `checkedBlock`: the cursor as the reorg check left it; receipt rows above it are re-read first.
 */
async function finalityStep(pass: Pass, checkedBlock: bigint | null): Promise<void> {
  const { deps, info, log, labels, outcome, head, finalBlock } = pass;
  try {
    const f = await finalizeTransfers(
      { ...deps, registry: deps.config.chains },
      {
        chainId: info.chainId,
        finalBlock,
        cursorBlock: pass.cursor?.blockNumber ?? null,
        checkedBlock,
        verifiedBlock: pass.cursor?.verifiedBlock ?? null,
        now: pass.clock.now(),
      },
    );
    outcome.finalized += f.finalized;
    outcome.orphaned += f.orphaned;
  } catch (err) {
    if (!isChainReadError(err)) throw err;
    log.warn(
      { err: errorMessage(err) },
      'finality step stopped: a receipt could not be read; next pass retries',
    );
  }
  if (!pass.cursor) return;
  await writeCursorHead(deps.db, info.chainId, head, finalBlock);
  // Wall time, not the pass clock (which may follow the sandbox's): Prometheus compares it with time().
  deps.metrics.chainLastPass.set(labels, Date.now() / 1000);
  deps.metrics.chainIndexedBlock.set(labels, Number(pass.cursor.blockNumber));
  outcome.lag = lagOf(head, pass.cursor.blockNumber);
  deps.metrics.chainLagBlocks.set(labels, outcome.lag);
}

function reportProgress(
  mem: IndexerMemory,
  log: Logger,
  p: { at: bigint; head: bigint; origin: bigint },
): void {
  const now = Date.now();
  if (now - mem.lastProgressLogAt < PROGRESS_EVERY_MS) return;
  mem.lastProgressLogAt = now;
  const span = p.head - p.origin;
  const done = p.at - p.origin;
  const pct = span <= 0n ? 100 : Math.min(100, Math.max(0, Number((done * 1000n) / span) / 10));
  log.info({ block: String(p.at), head: String(p.head) }, `indexed to block ${p.at} of ${p.head} (${pct}%)`);
}

/** Errors of reading the chain (viem's, or a receipt's block the node lacks): an outcome, never a crash. */
function isChainReadError(err: unknown): boolean {
  return (
    err instanceof BaseError || err instanceof ReceiptBlockUnavailableError || err instanceof ReadStopped
  );
}

function errorMessage(err: unknown): string {
  if (err instanceof BaseError) return err.shortMessage + (err.details ? `: ${err.details}` : '');
  return coerceError(err).message;
}

function nothingDone(lag: number | null): IndexOutcome {
  return { fromBlock: null, toBlock: null, transfersFound: 0, recovered: 0, finalized: 0, orphaned: 0, lag };
}

function lagOf(head: bigint, cursorBlock: bigint): number {
  return Number(head > cursorBlock ? head - cursorBlock : 0n);
}

/** `id in (...)` over row ids. */
function idsIn(ids: Iterable<string>) {
  return sql`id in (${sql.join(
    [...ids].map((id) => sql`${id}::bigint`),
    sql`, `,
  )})`;
}
