import { type Hex, numberToHex, type PublicClient } from 'viem';

/** What the indexer needs of a block: its hash (identity at that height) and its time. */
export interface BlockHeader {
  number: bigint;
  hash: Hex;
  timestamp: Date;
}

/**
 * The headers of these blocks, one request each, sent together (the transport batches them).
 * A block the node does not have answers null: the node is behind, which is not a reorg.
 */
export async function getBlockHeaders(
  client: PublicClient,
  numbers: Iterable<bigint>,
): Promise<Map<bigint, BlockHeader | null>> {
  const distinct = [...new Set(numbers)];
  const blocks = await Promise.all(distinct.map((n) => getBlockHeader(client, n)));
  return new Map(distinct.map((n, i) => [n, blocks[i] ?? null]));
}

/**
 * One block's header by number or tag, never cached (viem's getBlockNumber caches for its polling
 * interval). The indexer reads the head as the `latest` block rather than eth_blockNumber: the
 * same one request also gives the hash the first range can end on.
 */
export async function getBlockHeader(
  client: PublicClient,
  block: bigint | 'latest' | 'finalized',
): Promise<BlockHeader | null> {
  const raw = (await client.request({
    method: 'eth_getBlockByNumber',
    params: [typeof block === 'bigint' ? numberToHex(block) : block, false],
  })) as { number: Hex | null; hash: Hex | null; timestamp: Hex } | null;
  if (!raw?.hash || !raw.number) return null;
  return {
    number: BigInt(raw.number),
    hash: raw.hash.toLowerCase() as Hex,
    timestamp: new Date(Number(BigInt(raw.timestamp)) * 1000),
  };
}
