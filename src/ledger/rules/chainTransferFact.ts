/**
 * Chain transfer fact: one ERC-20 Transfer log as the indexer stored it (chain_transfers), with the
 * block it was included in. Every entry a chain fact causes carries that log's identity and block
 * hash in its idempotency key, so after a reorg the same log re-included in another block is a new
 * entry (docs/accounting.md, rule 3) while a replay of the same fact is the same entry.
 *
 * Glossary
 * - transfer: one Transfer(from, to, value) log of a token contract;
 * - proof: a transfer at or below the chain's finality, the strongest fact we have;
 * - orphaned: a block hash the chain no longer has at that height, after a reorg.
 */
import type { Token } from '../accounts.ts';

export interface ChainTransferFact {
  /** EIP-155 chain id. */
  chainId: number;
  txHash: `0x${string}`;
  logIndex: number;
  blockNumber: bigint;
  blockHash: `0x${string}`;
  /** The contract that emitted the log. Any contract can emit a Transfer; only accepted ones are money. */
  tokenAddress: `0x${string}`;
  from: `0x${string}`;
  to: `0x${string}`;
  /** The log's value in the token's base units. */
  amount: bigint;
  /** Block time. */
  occurredAt: Date;
  /**
   * How many times this inclusion came back after what it booked was reversed (the chain returned
   * to the block hash); 0 or absent for the first time. A revived inclusion books under new keys.
   */
  revival?: number;
}

/** The transfer's identity independent of the block it landed in: `<chainId>:<txHash>:<logIndex>`. */
export function chainTransferId(t: ChainTransferFact): string {
  return `${t.chainId}:${t.txHash.toLowerCase()}:${t.logIndex}`;
}

/**
 * The part of an idempotency key that names one inclusion: `<chainId>:<txHash>:<logIndex>:<blockHash>`,
 * and `:r<n>` after it for the n-th revival (the keys of the first time stay as they always were).
 */
export function chainInclusionKeyPart(t: ChainTransferFact): string {
  const revival = t.revival ? `:r${t.revival}` : '';
  return `${chainTransferId(t)}:${t.blockHash.toLowerCase()}${revival}`;
}

export function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** JSON-safe description of the transfer for entry metadata and finding details. */
export function chainTransferDetails(t: ChainTransferFact): Record<string, unknown> {
  return {
    chain_id: t.chainId,
    tx_hash: t.txHash.toLowerCase(),
    log_index: t.logIndex,
    block_number: t.blockNumber.toString(),
    block_hash: t.blockHash.toLowerCase(),
    token_address: t.tokenAddress.toLowerCase(),
    from: t.from.toLowerCase(),
    to: t.to.toLowerCase(),
    value: t.amount.toString(),
    ...(t.revival ? { revival: t.revival } : {}),
  };
}

/** Refuses a fact no rule can mean: a negative value or a negative log index. */
export function assertTransferShape(t: ChainTransferFact): void {
  if (t.amount < 0n) {
    throw new RangeError(`transfer ${chainTransferId(t)} has a negative amount ${t.amount}`);
  }
  if (!Number.isInteger(t.logIndex) || t.logIndex < 0) {
    throw new RangeError(`transfer ${t.txHash} has an invalid log index ${t.logIndex}`);
  }
  if (t.revival !== undefined && (!Number.isInteger(t.revival) || t.revival < 0)) {
    throw new RangeError(`transfer ${chainTransferId(t)} has an invalid revival ${t.revival}`);
  }
}

/**
 * The caller looked the transfer's contract up in the chain registry and passed the accepted token;
 * a token of another chain or contract is a bug in that look-up, not a property of the chain.
 */
export function assertTokenOfTransfer(token: Token, t: ChainTransferFact): void {
  if (token.chainId !== t.chainId || !sameAddress(token.address, t.tokenAddress)) {
    throw new RangeError(
      `token ${token.symbol} (${token.chainId}:${token.address}) is not the contract of transfer ` +
        `${chainTransferId(t)} (${t.tokenAddress}); pass the registry's token for that contract, or null`,
    );
  }
}
