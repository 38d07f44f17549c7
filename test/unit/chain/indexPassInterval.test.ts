import { describe, expect, it } from 'vitest';
import {
  indexPassIntervalMs,
  MAX_PASS_INTERVAL_MS,
  MIN_PASS_INTERVAL_MS,
} from '../../../src/chain/indexPassInterval.ts';
import { chainsFileSchema, createChainRegistry } from '../../../src/config/chainRegistry.ts';

describe('indexer pass interval: the finality window, between 4 s and 60 s', () => {
  it.each([
    // chain, interval: Base's 30 blocks of 2 s and Arbitrum's 240 of 0.25 s are a minute each;
    // BNB's 30 of 0.75 s are 22.5 s; Ethereum's 65 of 12 s and Polygon's 200 of 2 s pass the cap.
    [8453, 60_000],
    [42161, 60_000],
    [56, 22_500],
    [1, 60_000],
    [137, 60_000],
    [10, 60_000],
    [11155111, 60_000],
  ])('behavior: chain %i of the built-in registry: a pass every %i ms', (chainId, ms) => {
    const info = createChainRegistry().chain(chainId);
    expect(info && indexPassIntervalMs(info)).toBe(ms);
  });

  it('behavior: a block a second with 30 blocks to finality: a pass every 30 s (CHAINS_FILE block_time_ms)', () => {
    const registry = createChainRegistry(chainsFileSchema.parse([{ chain_id: 8453, block_time_ms: 1000 }]));
    expect(indexPassIntervalMs(registry.chain(8453)!)).toBe(30_000);
  });

  it('behavior: never shorter than 4 s, nor than a block; never longer than 60 s', () => {
    const pass = (depth: number, blockTimeMs: number) =>
      indexPassIntervalMs({ finality: { finalizedTag: false, depth }, blockTimeMs });
    expect(pass(0, 1)).toBe(MIN_PASS_INTERVAL_MS);
    expect(pass(2, 1000)).toBe(MIN_PASS_INTERVAL_MS);
    expect(pass(0, 50_000)).toBe(50_000);
    expect(pass(10_000, 600_000)).toBe(MAX_PASS_INTERVAL_MS);
  });
});
