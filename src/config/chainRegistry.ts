import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Token } from '../ledger/accounts.ts';

/**
 * The chain registry (docs/accounting.md, "Money"): per chain, the USDT and USDC contracts that count as
 * payment, their decimals, and when a block is final. A transfer of any other contract is never a
 * payment. Defaults are the real mainnet contracts; CHAINS_FILE overrides them per deployment (the
 * sandbox's own tokens come in that way).
 */
export interface Finality {
  /** Use the node's `finalized` block tag (chains that have one). */
  finalizedTag: boolean;
  /** Otherwise, or when the tag is off: final at this many blocks below the head. */
  depth: number;
}

export interface ChainInfo {
  chainId: number;
  name: string;
  tokens: Token[];
  finality: Finality;
  /**
   * The chain's block time in milliseconds: with the finality depth it says how long a payment
   * takes to become final, which spaces the indexer's passes (src/chain/indexPassInterval.ts).
   */
  blockTimeMs: number;
  /** Where the transfer indexer starts on its first run; unset: 10,000 blocks below the head. */
  startBlock?: bigint;
  /**
   * How many blocks below the head the indexer re-checks stored block hashes on every pass (reorg
   * detection). Default max(2 x depth, 64): a reorg deeper than this goes unseen.
   */
  reorgWindow: number;
  /**
   * A block explorer's base URL (https://etherscan.io): the HTML report links a transaction hash
   * as `<explorerUrl>/tx/<hash>`. Unset (local and unknown chains): hashes are plain text.
   */
  explorerUrl?: string;
}

/** The default reorg window for a finality depth: twice the depth, at least 64 blocks. */
export function defaultReorgWindow(depth: number): number {
  return Math.max(2 * depth, 64);
}

/**
 * The highest final block: the node's `finalized` tag block when the chain uses it, else the head
 * minus the finality depth (never below 0). `finalizedTagBlock` is what the node answered for the tag.
 */
export function finalBlockOf(finality: Finality, head: bigint, finalizedTagBlock?: bigint): bigint {
  if (finality.finalizedTag) {
    if (finalizedTagBlock === undefined)
      throw new Error('finalBlockOf: the chain uses the finalized tag; pass its block');
    return finalizedTagBlock;
  }
  const final = head - BigInt(finality.depth);
  return final < 0n ? 0n : final;
}

/** A chain the registry does not know: a block every 2 s until CHAINS_FILE says otherwise. */
const DEFAULT_BLOCK_TIME_MS = 2_000;

const t = (chainId: number, symbol: 'USDT' | 'USDC', address: string, decimals: number): Token => ({
  chainId,
  symbol,
  address: address.toLowerCase() as `0x${string}`,
  decimals,
});

export const DEFAULT_CHAINS: ChainInfo[] = [
  {
    chainId: 1,
    name: 'Ethereum',
    tokens: [
      t(1, 'USDT', '0xdAC17F958D2ee523a2206206994597C13D831ec7', 6),
      t(1, 'USDC', '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', 6),
    ],
    finality: { finalizedTag: true, depth: 65 },
    blockTimeMs: 12_000,
    reorgWindow: defaultReorgWindow(65),
    explorerUrl: 'https://etherscan.io',
  },
  {
    chainId: 8453,
    name: 'Base',
    tokens: [
      t(8453, 'USDT', '0xfde4C96c8593536E31F229EA8f37b2ADa2699bb2', 6),
      t(8453, 'USDC', '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', 6),
    ],
    finality: { finalizedTag: false, depth: 30 },
    blockTimeMs: 2_000,
    reorgWindow: defaultReorgWindow(30),
    explorerUrl: 'https://basescan.org',
  },
  {
    chainId: 56,
    name: 'BNB',
    tokens: [
      t(56, 'USDT', '0x55d398326f99059fF775485246999027B3197955', 18),
      t(56, 'USDC', '0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d', 18),
    ],
    finality: { finalizedTag: false, depth: 30 },
    blockTimeMs: 750,
    reorgWindow: defaultReorgWindow(30),
    explorerUrl: 'https://bscscan.com',
  },
  {
    chainId: 42161,
    name: 'Arbitrum',
    tokens: [
      t(42161, 'USDT', '0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9', 6),
      t(42161, 'USDC', '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', 6),
    ],
    finality: { finalizedTag: false, depth: 240 },
    blockTimeMs: 250,
    reorgWindow: defaultReorgWindow(240),
    explorerUrl: 'https://arbiscan.io',
  },
  {
    chainId: 137,
    name: 'Polygon',
    tokens: [
      t(137, 'USDT', '0xc2132D05D31c914a87C6611C10748AEb04B58e8F', 6),
      t(137, 'USDC', '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', 6),
    ],
    finality: { finalizedTag: false, depth: 200 },
    blockTimeMs: 2_000,
    reorgWindow: defaultReorgWindow(200),
    explorerUrl: 'https://polygonscan.com',
  },
  {
    chainId: 10,
    name: 'Optimism',
    tokens: [
      t(10, 'USDT', '0x94b008aA00579c1307B0EF2c499aD98a8ce58e58', 6),
      t(10, 'USDC', '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85', 6),
    ],
    finality: { finalizedTag: false, depth: 30 },
    blockTimeMs: 2_000,
    reorgWindow: defaultReorgWindow(30),
    explorerUrl: 'https://optimistic.etherscan.io',
  },
  {
    chainId: 11155111,
    name: 'Sepolia',
    tokens: [
      t(11155111, 'USDT', '0xaA8E23Fb1079EA71e0a56F48a2aA51851D8433D0', 6),
      t(11155111, 'USDC', '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238', 6),
    ],
    finality: { finalizedTag: true, depth: 65 },
    blockTimeMs: 12_000,
    reorgWindow: defaultReorgWindow(65),
    explorerUrl: 'https://sepolia.etherscan.io',
  },
];

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address');
const tokenOverride = z.object({ address, decimals: z.int().min(0).max(36) }).strict();

/** CHAINS_FILE: a JSON array of overrides or additional chains. */
export const chainsFileSchema = z.array(
  z
    .object({
      chain_id: z.int().positive(),
      name: z.string().min(1).optional(),
      tokens: z
        .object({ USDT: tokenOverride.optional(), USDC: tokenOverride.optional() })
        .strict()
        .optional(),
      finality: z
        .object({ finalized_tag: z.boolean().optional(), depth: z.int().min(0).max(10_000).optional() })
        .strict()
        .optional(),
      /**
       * The chain's block time in ms (default: the registry's, 2,000 for a chain it does not
       * know); with the finality depth it spaces the indexer's passes (indexPassInterval.ts).
       */
      block_time_ms: z.int().min(1).max(600_000).optional(),
      /** First block the indexer reads on its first run (a deployment's first payment, say). */
      start_block: z.int().min(0).optional(),
      /** Blocks below the head whose stored hashes are re-checked every pass; default max(2 x depth, 64). */
      reorg_window: z.int().min(1).max(100_000).optional(),
      /** Block explorer for the report's links (https://…, no trailing path); null: none (plain hashes). */
      explorer_url: z
        .url({ protocol: /^https?$/ })
        .transform((u) => u.replace(/\/+$/, ''))
        .nullable()
        .optional(),
    })
    .strict(),
);
export type ChainsFile = z.output<typeof chainsFileSchema>;

export interface ChainRegistry {
  chains(): ChainInfo[];
  chain(chainId: number): ChainInfo | undefined;
  /** The accepted token at this contract on this chain, or undefined: then it is never a payment. */
  token(chainId: number, address: string): Token | undefined;
  tokenBySymbol(chainId: number, symbol: string): Token | undefined;
}

export function createChainRegistry(overrides: ChainsFile = []): ChainRegistry {
  const byId = new Map(DEFAULT_CHAINS.map((c) => [c.chainId, structuredClone(c)]));
  for (const o of overrides) {
    const base = byId.get(o.chain_id) ?? {
      chainId: o.chain_id,
      name: o.name ?? `chain ${o.chain_id}`,
      tokens: [],
      finality: { finalizedTag: false, depth: 30 },
      blockTimeMs: DEFAULT_BLOCK_TIME_MS,
      reorgWindow: defaultReorgWindow(30),
    };
    if (o.name) base.name = o.name;
    for (const symbol of ['USDT', 'USDC'] as const) {
      const given = o.tokens?.[symbol];
      if (!given) continue;
      base.tokens = base.tokens.filter((x) => x.symbol !== symbol);
      base.tokens.push(t(o.chain_id, symbol, given.address, given.decimals));
    }
    if (o.finality?.finalized_tag !== undefined) base.finality.finalizedTag = o.finality.finalized_tag;
    if (o.finality?.depth !== undefined) base.finality.depth = o.finality.depth;
    if (o.block_time_ms !== undefined) base.blockTimeMs = o.block_time_ms;
    if (o.start_block !== undefined) base.startBlock = BigInt(o.start_block);
    base.reorgWindow = o.reorg_window ?? defaultReorgWindow(base.finality.depth);
    if (o.explorer_url === null) delete base.explorerUrl;
    else if (o.explorer_url !== undefined) base.explorerUrl = o.explorer_url;
    byId.set(o.chain_id, base);
  }
  return {
    chains: () => [...byId.values()],
    chain: (id) => byId.get(id),
    token: (chainId, addr) => byId.get(chainId)?.tokens.find((x) => x.address === addr.toLowerCase()),
    tokenBySymbol: (chainId, symbol) =>
      byId.get(chainId)?.tokens.find((x) => x.symbol === symbol.toUpperCase()),
  };
}

/** Reads and validates CHAINS_FILE; problems are one line each, naming the field. */
export function loadChainsFile(path: string): { chains: ChainsFile; problems: string[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : 'not valid JSON';
    return { chains: [], problems: [`CHAINS_FILE: ${path}: ${why}`] };
  }
  const parsed = chainsFileSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      chains: [],
      problems: parsed.error.issues.map(
        (i) => `CHAINS_FILE: ${path}: ${i.path.join('.') || '(top level)'}: ${i.message}`,
      ),
    };
  }
  return { chains: parsed.data, problems: [] };
}
