import type { Address, Hash } from 'viem';

export type CoinSymbol = 'USDT' | 'USDC';

export interface SandboxToken {
  symbol: CoinSymbol;
  address: Address;
  decimals: number;
}

/** Where a mined transfer landed. */
export interface MinedTransfer {
  txHash: Hash;
  blockNumber: bigint;
  blockHash: Hash;
  logIndex: number;
}

/**
 * One simulated chain: an anvil node with the sandbox's own USDT and USDC contracts and wallets
 * whose keys the sandbox holds. Wallets are named by label (`merchant:st_a`, `custody:biz_1`,
 * `buyer:<intent>`, `temp:<intent>`, `pool:<link>`): the same label is always the same address.
 */
export interface SandboxChain {
  chainId: number;
  rpcUrl: string;
  /** 18 on BNB (56), 6 elsewhere, as the spec says. */
  decimals: number;
  tokens: Record<CoinSymbol, SandboxToken>;
  /** The address of a labelled wallet (created, with gas, on first use). */
  wallet(label: string): Promise<Address>;
  /** New tokens out of thin air (the sandbox owns the contracts): buyers and custody wallets get funded this way. */
  mint(symbol: CoinSymbol, to: Address, amount: bigint): Promise<MinedTransfer>;
  /** A real ERC-20 transfer signed by the labelled wallet; resolves once mined. */
  transfer(symbol: CoinSymbol, fromLabel: string, to: Address, amount: bigint): Promise<MinedTransfer>;
  balanceOf(symbol: CoinSymbol, owner: Address): Promise<bigint>;
  /** Replaces the last `depth` blocks with empty ones: their transfers are orphaned. */
  reorg(depth: number): Promise<{ orphanedBlocks: bigint[] }>;
  /** Mines `blocks` empty blocks (to move finality). */
  mine(blocks: number): Promise<void>;
  headBlock(): Promise<bigint>;
}
