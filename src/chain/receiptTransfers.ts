import type { Hex, RpcLog } from 'viem';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { DbExecutor } from '../db/database.ts';
import { StablebooksError } from '../errors/stablebooksError.ts';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';
import { getBlockHeader } from './blockHeaders.ts';
import type { ChainRpc } from './rpcClients.ts';
import { storeTransfers } from './storeTransfers.ts';
import { decodeTransferLog } from './transferLog.ts';

/**
 * Single-transaction verification (docs/accounting.md, "Payments, payouts and the chain"): what one tx hash did on chain, read from
 * its receipt, for hashes the indexer has not reached yet. The result lists the Transfer logs of
 * every contract in the receipt; whether one is money (an accepted token) is the caller's call.
 */
export type ReceiptTransfers =
  | { status: 'not_found' }
  | { status: 'reverted'; blockNumber: bigint; blockHash: Hex }
  | {
      status: 'success';
      blockNumber: bigint;
      blockHash: Hex;
      blockTime: Date;
      transfers: ChainTransferFact[];
    };

/** The receipt's block the node could not give us: it is behind, or the block was just replaced. */
export class ReceiptBlockUnavailableError extends StablebooksError {
  readonly retryable = true;
  constructor(
    readonly chainId: number,
    readonly txHash: string,
    readonly blockNumber: bigint,
  ) {
    super(
      `chain ${chainId}: tx ${txHash} has a receipt in block ${blockNumber}, but the node has no such block; retry later`,
    );
    this.name = 'ReceiptBlockUnavailableError';
  }
}

interface RawReceipt {
  status: Hex | null;
  blockNumber: Hex | null;
  blockHash: Hex | null;
  logs: RpcLog[];
}

export async function receiptTransfers(
  rpc: ChainRpc,
  registry: ChainRegistry,
  chainId: number,
  txHash: Hex,
): Promise<ReceiptTransfers> {
  if (rpc.chainId !== chainId) {
    throw new Error(`receiptTransfers: the RPC client is for chain ${rpc.chainId}, not chain ${chainId}`);
  }
  if (!registry.chain(chainId)) {
    throw new Error(`receiptTransfers: chain ${chainId} is not in the chain registry; add it to CHAINS_FILE`);
  }
  const receipt = (await rpc.client.request({
    method: 'eth_getTransactionReceipt',
    params: [txHash],
  })) as RawReceipt | null;
  if (!receipt?.blockNumber || !receipt.blockHash) return { status: 'not_found' };
  const blockNumber = BigInt(receipt.blockNumber);
  const blockHash = receipt.blockHash.toLowerCase() as Hex;
  // Pre-Byzantium receipts have a root instead of a status; every chain we serve has status.
  if (receipt.status !== '0x1') return { status: 'reverted', blockNumber, blockHash };
  const header = await getBlockHeader(rpc.client, blockNumber);
  if (!header) throw new ReceiptBlockUnavailableError(chainId, txHash, blockNumber);
  if (header.hash !== blockHash) {
    // The receipt and the block came from different forks (a reorg in flight): nothing is certain yet.
    throw new ReceiptBlockUnavailableError(chainId, txHash, blockNumber);
  }
  const transfers: ChainTransferFact[] = [];
  for (const log of receipt.logs) {
    const fact = decodeTransferLog(chainId, log, header.timestamp);
    if (fact) transfers.push(fact);
  }
  return { status: 'success', blockNumber, blockHash, blockTime: header.timestamp, transfers };
}

/**
 * Stores a verification's transfers: source `receipt`, pending; a row stored before is left as it
 * is, unless it was orphaned: then it is revived as a receipt row (storeTransfers.ts). The
 * indexer's finality step re-reads the receipt before such a row becomes final while the indexer
 * has not read its block itself. Returns the ids of the rows that were new or revived.
 */
export async function storeReceiptTransfers(
  db: DbExecutor,
  facts: readonly ChainTransferFact[],
): Promise<bigint[]> {
  return storeTransfers(db, facts, 'receipt');
}
