import type { ChainInfo } from '../config/chainRegistry.ts';

/**
 * How often the transfer indexer passes over a chain (docs/decisions.md, "Idle cost (issue 33)").
 *
 * A payment is booked (rule 2) once its block is final, by the first pass after that: its
 * latency is the finality window (depth x block time) plus at most one interval. Every pass costs
 * RPC calls (the head, the cursor's block, and, with new blocks, two eth_getLogs and the range's
 * end again), and providers bill by the call; so the interval is the finality window itself,
 * which at most doubles the wait a chain imposes anyway, and never shorter than a block nor than
 * 4 s (no pass finds nothing new because it came too soon), never longer than 60 s (a slow-final
 * chain such as Ethereum still sees its finalized block within a minute of its move).
 *
 * Glossary
 * - finality window: depth x block time, the time from a block's mining to its being final (for a
 *   chain that follows the `finalized` tag, the registry's depth approximates the tag's distance).
 */
export const MIN_PASS_INTERVAL_MS = 4_000;
export const MAX_PASS_INTERVAL_MS = 60_000;

export function indexPassIntervalMs(info: Pick<ChainInfo, 'finality' | 'blockTimeMs'>): number {
  const finalityWindow = info.finality.depth * info.blockTimeMs;
  return Math.min(MAX_PASS_INTERVAL_MS, Math.max(MIN_PASS_INTERVAL_MS, info.blockTimeMs, finalityWindow));
}
