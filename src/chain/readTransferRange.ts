import type { PublicClient } from 'viem';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';
import { type BlockHeader, getBlockHeader, getBlockHeaders } from './blockHeaders.ts';
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

/**
 * One range: the end block's header first, then the logs (two filters: from a watched wallet, to a
 * watched wallet), then the headers of the blocks with logs (their time) and the end block again.
 * The end hash read before the logs becomes the cursor: if the chain changes between the calls,
 * the next pass's reorg check sees it and reads the range again.
 */
export async function readTransferRange(
  client: PublicClient,
  chainId: number,
  contracts: readonly string[],
  wallets: readonly string[],
  fromBlock: bigint,
  toBlock: bigint,
): Promise<RangeRead> {
  const endBefore = await getBlockHeader(client, toBlock);
  if (!endBefore) throw new ReadStopped(`the node has no block ${toBlock} yet`, 'node_behind');
  if (contracts.length === 0 || wallets.length === 0) return { end: endBefore, facts: [] };
  const [sent, received] = await Promise.all(
    (['from', 'to'] as const).map(
      (side) =>
        client.request({
          method: 'eth_getLogs',
          params: [transferLogFilter(contracts, side, wallets, fromBlock, toBlock)],
        }) as Promise<RawLog[]>,
    ),
  );
  const logs = new Map<string, RawLog>();
  for (const l of [...(sent ?? []), ...(received ?? [])]) {
    if (l.transactionHash && l.logIndex !== null) logs.set(`${l.transactionHash}:${l.logIndex}`, l);
  }
  const blockNumbers = new Set<bigint>([toBlock]);
  for (const l of logs.values()) if (l.blockNumber) blockNumbers.add(BigInt(l.blockNumber));
  const headers = await getBlockHeaders(client, blockNumbers);
  const endAfter = headers.get(toBlock);
  if (!endAfter) throw new ReadStopped(`the node has no block ${toBlock} any more`, 'node_behind');
  if (endAfter.hash !== endBefore.hash) {
    throw new ReadStopped(`block ${toBlock} changed while reading its range`, 'reorg_in_flight');
  }
  const facts: ChainTransferFact[] = [];
  for (const l of logs.values()) {
    if (!l.blockNumber || !l.blockHash) continue;
    const header = headers.get(BigInt(l.blockNumber));
    if (!header) throw new ReadStopped(`the node has no block ${BigInt(l.blockNumber)}`, 'node_behind');
    if (header.hash !== l.blockHash.toLowerCase()) {
      throw new ReadStopped(`block ${header.number} changed while reading its logs`, 'reorg_in_flight');
    }
    const fact = decodeTransferLog(chainId, l, header.timestamp);
    if (fact) facts.push(fact);
  }
  facts.sort((a, b) =>
    a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1,
  );
  return { end: endBefore, facts };
}

type RawLog = Parameters<typeof decodeTransferLog>[1];
