import { InvalidParamsRpcError, RpcRequestError } from 'viem';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createLogRangeState, readAdaptiveRange, smallerRange } from '../../../src/chain/getLogsAdaptive.ts';
import {
  createChainRpc,
  createChainRpcs,
  isRateLimitError,
  redactRpcUrl,
  rpcErrorOutcome,
} from '../../../src/chain/rpcClients.ts';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { startRpcProxy } from '../../helpers/rpcProxy.ts';
import { metricValue } from './indexerKit.ts';

/** The shared anvil is only read here. */
const rpcUrl = inject('rpcUrl');
const proxy = await startRpcProxy(rpcUrl);
afterAll(() => proxy.close());
const info = { chainId: 31337, name: 'anvil' };

const rpcError = (code: number, message: string) =>
  new InvalidParamsRpcError(new RpcRequestError({ body: {}, error: { code, message }, url: 'http://x' }));

describe('RPC clients', () => {
  it('behavior: one metric per method and outcome, with a duration, and no URL in any label', async () => {
    const metrics = createMetrics();
    const rpc = createChainRpc(info, [`${proxy.url}/v2/key-abc`], metrics, { retryDelayMs: 10 });
    await rpc.client.getChainId();
    await rpc.client.request({ method: 'eth_blockNumber' });
    expect(
      await metricValue(metrics, 'stablebooks_rpc_requests_total', { method: 'eth_chainId', outcome: 'ok' }),
    ).toBe(1);
    expect(
      await metricValue(
        metrics,
        'stablebooks_rpc_request_seconds',
        { method: 'eth_blockNumber', chain_id: '31337' },
        'stablebooks_rpc_request_seconds_count',
      ),
    ).toBe(1);
    expect(await metrics.registry.metrics()).not.toContain('key-abc');
    expect(rpc.hosts).toEqual([`http://${new URL(proxy.url).host}/…`]);
    expect(rpc.perUrl).toHaveLength(1);
  });

  it('behavior: a slow node is counted as timeout', async () => {
    const metrics = createMetrics();
    const rpc = createChainRpc(info, [proxy.url], metrics, { timeoutMs: 50, retryCount: 0 });
    proxy.set({ delayMs: 200 });
    try {
      await expect(rpc.client.request({ method: 'eth_blockNumber' })).rejects.toThrow();
    } finally {
      proxy.set({ delayMs: 0 });
    }
    expect(await metricValue(metrics, 'stablebooks_rpc_requests_total', { outcome: 'timeout' })).toBe(1);
  });

  it('behavior: a rate limit said only in words is retried like an HTTP 429', async () => {
    const metrics = createMetrics();
    const rpc = createChainRpc(info, [proxy.url], metrics, { retryDelayMs: 10, retryCount: 2 });
    proxy.set({ rateLimitNext: 2, rateLimitStyle: 'message' });
    expect(await rpc.perUrl[0]!.request({ method: 'eth_chainId' })).toBe('0x7a69');
    expect(await metricValue(metrics, 'stablebooks_rpc_requests_total', { outcome: 'rate_limited' })).toBe(2);
  });

  it('behavior: createChainRpcs makes one client per chain with RPC URLs', () => {
    const rpcs = createChainRpcs(
      {
        rpcUrls: new Map([[8453, ['https://a.example/k', 'https://b.example/k']]]),
        chains: createChainRegistry(),
      },
      createMetrics(),
    );
    expect([...rpcs.keys()]).toEqual([8453]);
    expect(rpcs.get(8453)?.perUrl).toHaveLength(2);
    expect(rpcs.get(8453)?.hosts).toEqual(['https://a.example/…', 'https://b.example/…']);
  });

  it.each([
    ['https://eth-mainnet.g.alchemy.com/v2/SECRET', 'https://eth-mainnet.g.alchemy.com/…'],
    ['https://user:pass@rpc.example:8443', 'https://rpc.example:8443/…'],
    ['https://rpc.example/?apikey=SECRET', 'https://rpc.example/…'],
    ['http://127.0.0.1:8545', 'http://127.0.0.1:8545'],
    ['not a url', '(unparseable RPC URL)'],
  ])('behavior: %s is logged as %s', (url, shown) => {
    expect(redactRpcUrl(url)).toBe(shown);
  });

  it('behavior: rate limits are recognised by code or by message', () => {
    expect(isRateLimitError(rpcError(-32005, 'limit exceeded'))).toBe(true);
    expect(isRateLimitError(rpcError(-32000, 'Too Many Requests'))).toBe(true);
    expect(isRateLimitError(rpcError(-32000, 'daily request rate limit reached'))).toBe(true);
    expect(isRateLimitError(rpcError(-32602, 'query exceeds max block range 100'))).toBe(false);
    expect(rpcErrorOutcome(new Error('boom'))).toBe('error');
  });
});

describe('adaptive getLogs ranges', () => {
  it.each([
    [
      'alchemy',
      'Log response size exceeded. Based on your parameters, this block range should work: [0x64, 0x95]',
      50n,
    ],
    ['max block range', 'query exceeds max block range 20', 21n], // ponder's chunk is range + 1; refused again, then halved
    ['result count (halve)', 'query returned more than 10000 results', 500n],
    ['block range too large (halve)', 'block range too large', 500n],
  ])('behavior: a range error (%s) gives a smaller range', (_name, message, size) => {
    expect(smallerRange(rpcError(-32602, message), 100n, 1099n)).toBe(size);
  });

  it('behavior: errors no smaller range can fix are left to the caller', () => {
    expect(smallerRange(rpcError(-32000, 'Too many requests'), 100n, 1099n)).toBeNull();
    expect(smallerRange(rpcError(-32601, 'the method eth_getLogs does not exist'), 100n, 1099n)).toBeNull();
    expect(smallerRange(rpcError(-32602, 'block range too large'), 100n, 100n)).toBeNull();
  });

  it('behavior: ranges double after success up to the max, shrink on a limit and learn it', async () => {
    const state = createLogRangeState({ initial: 10n, max: 80n });
    const spans: bigint[] = [];
    const limit = 30n;
    const read = async (from: bigint, to: bigint) => {
      spans.push(to - from + 1n);
      if (to - from + 1n > limit) throw rpcError(-32602, `query exceeds max block range ${limit}`);
      return to;
    };
    let from = 0n;
    while (from <= 300n) from = (await readAdaptiveRange(state, from, 300n, read)).toBlock + 1n;
    // 10, 20, 40 refused -> 31 (ponder's reading) refused -> 15, then grows to 30, just below what failed.
    expect(spans.slice(0, 7)).toEqual([10n, 20n, 40n, 31n, 15n, 30n, 30n]);
    expect(spans.slice(7).every((s) => s <= 30n)).toBe(true);
    expect(state.ceiling).toBe(30n);
  });
});
