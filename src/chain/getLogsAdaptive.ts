import { getLogsRetryHelper } from '@ponder/utils';
import { hexToBigInt, numberToHex, type RpcError } from 'viem';
import { bigintMin } from '../money/bigintMin.ts';
import { isRateLimitError, rpcErrorOutcome } from './rpcClients.ts';

/**
 * Adaptive eth_getLogs ranges. Providers cap a getLogs request by block span or by result size,
 * each with its own error message; the range starts small, doubles after each success up to a
 * maximum, and shrinks on a range error: to the range the provider suggests when
 * `getLogsRetryHelper` (@ponder/utils) recognises its message, else by half when the message
 * looks like a range or result limit (or the request timed out). Any other error is the caller's
 * to handle (viem has already retried it).
 *
 * Glossary
 * - size: blocks per request, both ends included;
 * - ceiling: the largest size to grow to; lowered to just below a size that failed, and raised
 *   again (doubled) after a run of successes, so a provider's limit is learnt rather than hit every
 *   other request.
 */
export interface LogRangeState {
  size: bigint;
  ceiling: bigint;
  readonly max: bigint;
  /** Successes in a row at the ceiling. */
  streak: number;
}

export function createLogRangeState(options: { initial?: bigint; max?: bigint } = {}): LogRangeState {
  const max = options.max ?? 50_000n;
  const initial = options.initial ?? 2_000n;
  return { size: initial < max ? initial : max, ceiling: max, max, streak: 0 };
}

/** Successes at the ceiling before trying a larger one. */
const RAISE_CEILING_AFTER = 20;
/** Shrinks of one range before giving up on it. */
const MAX_SHRINKS = 24;

const RANGE_LIMIT_MESSAGE =
  /block range|range (is )?too (large|wide)|max(imum)? (block )?range|too many (results|logs|blocks)|response size|result.*(limit|exceed)|exceed|more than \d+ results|query timeout/i;

/**
 * Reads [fromBlock, up to lastBlock] with `read`, as much as the provider allows in one go: the
 * returned toBlock is where the read range ended (the caller continues from toBlock + 1).
 */
export async function readAdaptiveRange<T>(
  state: LogRangeState,
  fromBlock: bigint,
  lastBlock: bigint,
  read: (fromBlock: bigint, toBlock: bigint) => Promise<T>,
): Promise<{ toBlock: bigint; value: T }> {
  for (let shrinks = 0; ; shrinks++) {
    const toBlock = bigintMin(fromBlock + state.size - 1n, lastBlock);
    try {
      const value = await read(fromBlock, toBlock);
      grow(state, toBlock - fromBlock + 1n);
      return { toBlock, value };
    } catch (err) {
      const span = toBlock - fromBlock + 1n;
      const smaller = span > 1n && shrinks < MAX_SHRINKS ? smallerRange(err, fromBlock, toBlock) : null;
      if (smaller === null) throw err;
      // `span` is known to fail: grow back to just below it at most, until a run of successes.
      state.size = smaller;
      state.ceiling = span - 1n;
      state.streak = 0;
    }
  }
}

function grow(state: LogRangeState, span: bigint): void {
  if (span < state.size) return; // the range was cut by lastBlock: it says nothing about the limit
  if (state.size >= state.ceiling) {
    state.streak++;
    if (state.streak >= RAISE_CEILING_AFTER && state.ceiling < state.max) {
      state.ceiling = bigintMin(state.ceiling * 2n, state.max);
      state.streak = 0;
    }
  }
  state.size = bigintMin(state.size * 2n, state.ceiling);
}

/**
 * The smaller range size to retry [fromBlock, toBlock] with after `err`, or null when the error is
 * not about the range (rate limits, node down, bad request): retrying smaller would not help.
 */
export function smallerRange(err: unknown, fromBlock: bigint, toBlock: bigint): bigint | null {
  const span = toBlock - fromBlock + 1n;
  if (span <= 1n || isRateLimitError(err)) return null;
  const summary = errorSummary(err);
  const helped = getLogsRetryHelper({
    params: [{ fromBlock: numberToHex(fromBlock), toBlock: numberToHex(toBlock) }],
    error: summary as unknown as RpcError,
  });
  if (helped.shouldRetry) {
    const first = helped.ranges[0];
    if (first) {
      const suggested = hexToBigInt(first.toBlock) - hexToBigInt(first.fromBlock) + 1n;
      if (suggested >= 1n && suggested < span) return suggested;
    }
  }
  if (RANGE_LIMIT_MESSAGE.test(summary.message) || rpcErrorOutcome(err) === 'timeout') {
    return span / 2n;
  }
  return null;
}

/** The first JSON-RPC code and every message along the cause chain: what provider matchers look at. */
function errorSummary(err: unknown): { code?: number; message: string } {
  const messages: string[] = [];
  let code: number | undefined;
  let current: unknown = err;
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    const e = current as Error & { code?: unknown; details?: unknown; shortMessage?: unknown };
    if (code === undefined && typeof e.code === 'number') code = e.code;
    for (const m of [e.details, e.shortMessage, e.message]) if (typeof m === 'string') messages.push(m);
    current = e.cause;
  }
  if (messages.length === 0) messages.push(String(err));
  return code === undefined ? { message: messages.join(' | ') } : { code, message: messages.join(' | ') };
}
