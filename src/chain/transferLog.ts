import { type Hex, numberToHex, pad, type RpcLog, toEventSelector } from 'viem';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';

/**
 * The ERC-20 Transfer event as it appears in raw logs: topic 0 the event selector, topics 1 and 2
 * the indexed `from` and `to`, the data the 32-byte value. An ERC-721 Transfer has the same
 * selector but a fourth topic (the token id) and no data: never decoded as a transfer here.
 */
export const TRANSFER_TOPIC: Hex = toEventSelector('Transfer(address,address,uint256)');

/** One address as an indexed topic. */
export function addressTopic(address: string): Hex {
  return pad(address.toLowerCase() as Hex, { size: 32 });
}

/** eth_getLogs filter of the Transfer logs of these contracts sent by (`from`) or to (`to`) these wallets. */
export function transferLogFilter(
  contracts: readonly string[],
  side: 'from' | 'to',
  wallets: readonly string[],
  fromBlock: bigint,
  toBlock: bigint,
): { address: Hex[]; topics: (Hex | Hex[] | null)[]; fromBlock: Hex; toBlock: Hex } {
  const walletTopics = wallets.map(addressTopic);
  return {
    address: contracts.map((c) => c.toLowerCase() as Hex),
    topics: side === 'from' ? [TRANSFER_TOPIC, walletTopics] : [TRANSFER_TOPIC, null, walletTopics],
    fromBlock: numberToHex(fromBlock),
    toBlock: numberToHex(toBlock),
  };
}

/**
 * The transfer in a raw log, or null when the log is not an ERC-20 Transfer (another event, an
 * ERC-721 Transfer, a removed log, a pending log without block). Every hex string is lowercased,
 * as chain_transfers requires.
 */
export function decodeTransferLog(
  chainId: number,
  log: Pick<
    RpcLog,
    'address' | 'topics' | 'data' | 'blockNumber' | 'blockHash' | 'transactionHash' | 'logIndex' | 'removed'
  >,
  blockTime: Date,
): ChainTransferFact | null {
  const [topic0, fromTopic, toTopic, ...rest] = log.topics;
  if (topic0?.toLowerCase() !== TRANSFER_TOPIC || !fromTopic || !toTopic || rest.length > 0) return null;
  if (!/^0x[0-9a-fA-F]{64}$/.test(log.data)) return null;
  if (log.removed || !log.blockNumber || !log.blockHash || !log.transactionHash || log.logIndex === null) {
    return null;
  }
  return {
    chainId,
    txHash: log.transactionHash.toLowerCase() as Hex,
    logIndex: Number(BigInt(log.logIndex)),
    blockNumber: BigInt(log.blockNumber),
    blockHash: log.blockHash.toLowerCase() as Hex,
    tokenAddress: log.address.toLowerCase() as Hex,
    from: topicAddress(fromTopic),
    to: topicAddress(toTopic),
    amount: BigInt(log.data),
    occurredAt: blockTime,
  };
}

function topicAddress(topic: Hex): Hex {
  return `0x${topic.slice(-40).toLowerCase()}`;
}
