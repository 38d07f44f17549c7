import { describe, expect, it } from 'vitest';
import {
  chainsFileSchema,
  createChainRegistry,
  defaultReorgWindow,
  finalBlockOf,
} from '../../../src/config/chainRegistry.ts';

describe('chain registry: finality and indexer settings', () => {
  it.each([
    [1, true, 65],
    [11155111, true, 65],
    [137, false, 200],
    [42161, false, 240],
    [8453, false, 30],
    [10, false, 30],
    [56, false, 30],
  ])(
    'behavior: chain %i defaults: finalized tag %s, depth %i, reorg window max(2 x depth, 64)',
    (id, tag, depth) => {
      const chain = createChainRegistry().chain(id);
      expect(chain?.finality).toEqual({ finalizedTag: tag, depth });
      expect(chain?.reorgWindow).toBe(Math.max(2 * depth, 64));
      expect(chain?.startBlock).toBeUndefined();
    },
  );

  it('behavior: CHAINS_FILE start_block and reorg_window override; the window follows an overridden depth', () => {
    const registry = createChainRegistry(
      chainsFileSchema.parse([
        { chain_id: 8453, start_block: 12_345_678, reorg_window: 500 },
        { chain_id: 137, finality: { depth: 100 } },
        { chain_id: 31337, finality: { finalized_tag: false, depth: 2 }, start_block: 0 },
      ]),
    );
    expect(registry.chain(8453)).toMatchObject({ startBlock: 12_345_678n, reorgWindow: 500 });
    expect(registry.chain(137)?.reorgWindow).toBe(200);
    expect(registry.chain(31337)).toMatchObject({ startBlock: 0n, reorgWindow: 64 });
    // The defaults are not changed by an override.
    expect(createChainRegistry().chain(8453)?.startBlock).toBeUndefined();
  });

  it.each([
    [1, 12_000],
    [11155111, 12_000],
    [137, 2_000],
    [42161, 250],
    [8453, 2_000],
    [10, 2_000],
    [56, 750],
  ])('behavior: chain %i block time defaults to %i ms', (id, ms) => {
    expect(createChainRegistry().chain(id)?.blockTimeMs).toBe(ms);
  });

  it('behavior: CHAINS_FILE block_time_ms overrides; a chain the registry does not know has 2 s blocks', () => {
    const registry = createChainRegistry(
      chainsFileSchema.parse([{ chain_id: 8453, block_time_ms: 1000 }, { chain_id: 31337 }]),
    );
    expect(registry.chain(8453)?.blockTimeMs).toBe(1000);
    expect(registry.chain(31337)?.blockTimeMs).toBe(2000);
    expect(createChainRegistry().chain(8453)?.blockTimeMs).toBe(2000);
  });

  it.each([
    [{ chain_id: 1, block_time_ms: 0 }],
    [{ chain_id: 1, block_time_ms: 1.5 }],
    [{ chain_id: 1, block_time_ms: '1000' }],
    [{ chain_id: 1, start_block: -1 }],
    [{ chain_id: 1, reorg_window: 0 }],
    [{ chain_id: 1, start_block: '5' }],
  ])('error: invalid indexer settings are refused: %j', (entry) => {
    expect(chainsFileSchema.safeParse([entry]).success).toBe(false);
  });

  it('behavior: the final block is the finalized tag block, or head - depth (never below 0)', () => {
    expect(finalBlockOf({ finalizedTag: false, depth: 30 }, 100n)).toBe(70n);
    expect(finalBlockOf({ finalizedTag: false, depth: 30 }, 10n)).toBe(0n);
    expect(finalBlockOf({ finalizedTag: true, depth: 65 }, 1000n, 904n)).toBe(904n);
    expect(() => finalBlockOf({ finalizedTag: true, depth: 65 }, 1000n)).toThrow(/finalized tag/);
    expect(defaultReorgWindow(2)).toBe(64);
    expect(defaultReorgWindow(240)).toBe(480);
  });
});

describe('chain registry: block explorers', () => {
  it('behavior: the public chains link an explorer, CHAINS_FILE sets or removes one, a local chain has none', () => {
    const defaults = createChainRegistry();
    expect(defaults.chain(1)?.explorerUrl).toBe('https://etherscan.io');
    expect(defaults.chain(11155111)?.explorerUrl).toBe('https://sepolia.etherscan.io');
    expect(defaults.chain(56)?.explorerUrl).toBe('https://bscscan.com');
    expect(defaults.chain(137)?.explorerUrl).toBe('https://polygonscan.com');
    for (const chain of defaults.chains())
      expect(chain.explorerUrl, chain.name).toMatch(/^https:\/\/[a-z.]+$/);

    const registry = createChainRegistry(
      chainsFileSchema.parse([
        { chain_id: 8453, explorer_url: 'https://base.blockscout.com/' },
        { chain_id: 1, explorer_url: null },
        { chain_id: 31337, name: 'anvil' },
      ]),
    );
    expect(registry.chain(8453)?.explorerUrl).toBe('https://base.blockscout.com');
    expect(registry.chain(1)?.explorerUrl).toBeUndefined();
    expect(registry.chain(31337)?.explorerUrl).toBeUndefined();
    expect(createChainRegistry().chain(1)?.explorerUrl).toBe('https://etherscan.io');
  });

  it.each([['javascript:alert(1)'], ['ftp://example.com'], ['not a url'], [5]])(
    'error: an explorer_url that is not http(s) is refused: %j',
    (url) => {
      expect(chainsFileSchema.safeParse([{ chain_id: 1, explorer_url: url }]).success).toBe(false);
    },
  );
});
