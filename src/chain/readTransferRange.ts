import type { Hex, PublicClient } from 'viem';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';
import { type BlockHeader, getBlockHeader, getBlockHeaders } from './blockHeaders.ts';
import { RpcMalformedResultError } from './rpcClients.ts';
import { decodeTransferLog, transferLogFilter } from './transferLog.ts';

/** The reading stopped: the node is behind, or its blocks changed under us (a reorg in flight). */
export class ReadStopped extends Error {
  constructor(
    message: string,
    readonly reason: 'node_behind' | 'reorg_in_flight',
  ) {
    super(message);
    this.name = 'ReadStopped';
  }
}

export interface RangeRead {
  end: BlockHeader;
  facts: ChainTransferFact[];
}

export interface RangeReadOptions {
  /**
   * A stored block below the range (the cursor) that must still be on the chain when the end block
   * is read: both are read in one batch, so the range is known to extend the stored chain.
   */
  anchor?: { blockNumber: bigint; blockHash: string } | null;
  /** The end block's header, already read in one batch with the anchor by the caller. */
  end?: BlockHeader;
}

/**
 * One range, in three rounds: the end block's header (with the anchor, in one batch, unless the
 * caller read them already); the logs (two filters: from a watched wallet, to a watched wallet);
 * the end block again. A block hash commits to every block below it, so an unchanged end hash
 * means the logs were read from the chain that the end block (the next cursor) belongs to, and
 * the anchor check ties that chain to what is stored already: the next pass's reorg check needs
 * only the cursor block to vouch for every row read this way.
 *
 * The end hash does not vouch for the answer being complete: a node behind a load balancer, or a
 * lagging fallback, can leave logs out of a range it knows the end of (or answer null, which is
 * an error here). The indexer reads each range again once it is final (indexChain.ts).
 *
 * A log's time is its `blockTimestamp` (returned by anvil, reth and recent geth); only blocks of
 * logs without one have their header read, in the batch of the last round, and their hash checked
 * against the log's.
 */
export async function readTransferRange(
  client: PublicClient,
  chainId: number,
  contracts: readonly string[],
  wallets: readonly string[],
  fromBlock: bigint,
  toBlock: bigint,
  options: RangeReadOptions = {},
): Promise<RangeRead> {
  const endBefore = options.end ?? (await readEnd(client, toBlock, options.anchor ?? null));
  if (endBefore.number !== toBlock)
    throw new Error(`readTransferRange: the end header is not block ${toBlock}`);
  if (contracts.length === 0 || wallets.length === 0) return { end: endBefore, facts: [] };
  const getLogs = async (side: 'from' | 'to') =>
    logList(
      await client.request({
        method: 'eth_getLogs',
        params: [transferLogFilter(contracts, side, wallets, fromBlock, toBlock)],
      }),
    );
  const [sent, received] = await Promise.all([getLogs('from'), getLogs('to')]);
  const logs = new Map<string, RawLog>();
  for (const l of [...sent, ...received]) {
    if (l.transactionHash && l.logIndex !== null) logs.set(`${l.transactionHash}:${l.logIndex}`, l);
  }
  // One hash per height among the logs; the end block's must be the end hash.
  const hashAt = new Map<bigint, string>([[toBlock, endBefore.hash]]);
  const untimed = new Set<bigint>();
  for (const l of logs.values()) {
    if (!l.blockNumber || !l.blockHash) continue;
    const n = BigInt(l.blockNumber);
    const hash = l.blockHash.toLowerCase();
    const seen = hashAt.get(n);
    if (seen !== undefined && seen !== hash) {
      throw new ReadStopped(`block ${n} changed while reading its logs`, 'reorg_in_flight');
    }
    hashAt.set(n, hash);
    if (!l.blockTimestamp) untimed.add(n);
  }
  const headers = await getBlockHeaders(client, [toBlock, ...untimed]);
  const endAfter = headers.get(toBlock);
  if (!endAfter) throw new ReadStopped(`the node has no block ${toBlock} any more`, 'node_behind');
  if (endAfter.hash !== endBefore.hash) {
    throw new ReadStopped(`block ${toBlock} changed while reading its range`, 'reorg_in_flight');
  }
  const facts: ChainTransferFact[] = [];
  for (const l of logs.values()) {
    if (!l.blockNumber || !l.blockHash) continue;
    const n = BigInt(l.blockNumber);
    let time: Date;
    if (l.blockTimestamp) {
      time = new Date(Number(BigInt(l.blockTimestamp)) * 1000);
    } else {
      const header = headers.get(n);
      if (!header) throw new ReadStopped(`the node has no block ${n}`, 'node_behind');
      if (header.hash !== l.blockHash.toLowerCase()) {
        throw new ReadStopped(`block ${n} changed while reading its logs`, 'reorg_in_flight');
      }
      time = header.timestamp;
    }
    const fact = decodeTransferLog(chainId, l, time);
    if (fact) facts.push(fact);
  }
  facts.sort((a, b) =>
    a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1,
  );
  return { end: endBefore, facts };
}

/** The end block's header, and the anchor's in the same batch: the anchor must not have changed. */
async function readEnd(
  client: PublicClient,
  toBlock: bigint,
  anchor: { blockNumber: bigint; blockHash: string } | null,
): Promise<BlockHeader> {
  const [end, anchored] = await Promise.all([
    getBlockHeader(client, toBlock),
    anchor && anchor.blockNumber !== toBlock ? getBlockHeader(client, anchor.blockNumber) : null,
  ]);
  if (!end) throw new ReadStopped(`the node has no block ${toBlock} yet`, 'node_behind');
  const anchorHeader = anchor?.blockNumber === toBlock ? end : anchored;
  if (anchor && !anchorHeader) {
    throw new ReadStopped(`the node has no block ${anchor.blockNumber} any more`, 'node_behind');
  }
  if (anchor && anchorHeader && anchorHeader.hash !== anchor.blockHash.toLowerCase()) {
    throw new ReadStopped(
      `block ${anchor.blockNumber} changed before its next range was read`,
      'reorg_in_flight',
    );
  }
  return end;
}

/**
 * An eth_getLogs answer as a list. Anything else (a lagging node's null) is an error, never "no
 * logs": the range is read again, by the next attempt or the next pass. (The instrumented
 * transport refuses it first; this is for any other client.)
 */
function logList(answer: unknown): RawLog[] {
  if (!Array.isArray(answer)) throw new RpcMalformedResultError('eth_getLogs', answer);
  return answer as RawLog[];
}

/** A raw log as eth_getLogs answers it; `blockTimestamp` only from nodes that add it. */
type RawLog = Parameters<typeof decodeTransferLog>[1] & { blockTimestamp?: Hex | null };
