import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import type { MinedTransfer } from '../../../src/sandbox/chain/types.ts';
import { type RpcProxy, startRpcProxy } from '../../helpers/rpcProxy.ts';
import { CHAIN_ID, createIndexerKit, metricValue } from './indexerKit.ts';

/**
 * The indexer against providers that misbehave the way real ones do: block-range limits with
 * their own messages, rate limits, a fallback URL that is down, a node that is behind.
 */
const kit = await createIndexerKit('index_providers');
const { chain } = kit;

// ~300 blocks with a watched transfer every ~37 blocks.
const sent: MinedTransfer[] = [];
await chain.mint('USDC', await chain.wallet('buyer:p'), 1_000_000n);
for (let i = 0; i < 8; i++) {
  sent.push(await chain.transfer('USDC', 'buyer:p', kit.merchant, BigInt(i + 1)));
  await chain.mint('USDT', kit.custody, 1n);
  await chain.mine(35);
}
const head = await kit.head();

async function withProxy<T>(fn: (proxy: RpcProxy) => Promise<T>): Promise<T> {
  const proxy = await startRpcProxy(kit.anvil.rpcUrl);
  try {
    return await fn(proxy);
  } finally {
    await proxy.close();
  }
}

/** As the owner: the daemon's role never deletes transfers or cursors. */
async function resetIndex() {
  await kit.db.ownerDb.execute(sql`delete from chain_transfers`);
  await kit.db.ownerDb.execute(sql`delete from chain_cursors`);
}

async function expectEverythingIndexed() {
  const rows = await kit.rows();
  const merchantRows = rows.filter((r) => r.to_address === kit.merchant.toLowerCase());
  expect(merchantRows.map((r) => r.tx_hash)).toEqual(sent.map((s) => s.txHash));
  expect(rows.filter((r) => r.to_address === kit.custody.toLowerCase()).length).toBe(8);
  expect((await kit.cursor())?.block_number).toBe(String(head));
}

function getLogsSpans(proxy: RpcProxy): bigint[] {
  return proxy.calls
    .filter((c) => c.method === 'eth_getLogs')
    .map((c) => {
      const f = c.params[0] as { fromBlock: string; toBlock: string };
      return BigInt(f.toBlock) - BigInt(f.fromBlock) + 1n;
    });
}

describe('transfer indexer: providers', () => {
  it.each([['alchemy' as const], ['max_block_range' as const]])(
    'behavior: a 50-block getLogs limit (%s message): every transfer over ~300 blocks is indexed',
    async (style) => {
      await resetIndex();
      await withProxy(async (proxy) => {
        proxy.set({ maxLogRange: 50, rangeErrorStyle: style });
        const deps = kit.deps([proxy.url]);
        let outcome = await indexChainPass(deps, CHAIN_ID, { maxRanges: 100 });
        for (let i = 0; i < 5 && outcome.lag !== 0; i++) outcome = await indexChainPass(deps, CHAIN_ID);
        expect(outcome.skipped).toBeUndefined();
        await expectEverythingIndexed();
        const spans = getLogsSpans(proxy);
        expect(spans.some((s) => s > 50n)).toBe(true); // it tried big ranges and was refused
        expect(spans.filter((s) => s <= 50n).length).toBeGreaterThanOrEqual(12); // then read ~300 blocks in <= 50
      });
    },
  );

  it('behavior: work per pass is bounded; a backfill proceeds over several passes', async () => {
    await resetIndex();
    await withProxy(async (proxy) => {
      proxy.set({ maxLogRange: 50 });
      const deps = kit.deps([proxy.url]);
      const first = await indexChainPass(deps, CHAIN_ID, { maxRanges: 2, initialRange: 20n });
      expect(first.fromBlock).toBe(0n);
      expect(first.toBlock).toBe(59n); // 20, then 40
      expect(first.lag).toBe(Number(head - 59n));
      const second = await indexChainPass(deps, CHAIN_ID, { maxRanges: 2 });
      expect(second.fromBlock).toBe(60n);
      while ((await indexChainPass(deps, CHAIN_ID)).lag !== 0) {}
      await expectEverythingIndexed();
      expect(kit.logLines.some((l) => /indexed to block \d+ of \d+ \(\d+(\.\d)?%\)/.test(l))).toBe(true);
    });
  });

  it.each([['refused' as const], ['503' as const]])(
    'behavior: the first of two fallback URLs is down (%s): everything is still indexed',
    async (how) => {
      await resetIndex();
      await withProxy(async (proxy) => {
        if (how === 'refused') await proxy.goDown();
        else proxy.set({ unavailable: true });
        const deps = kit.deps([proxy.url, kit.anvil.rpcUrl]);
        const outcome = await indexChainPass(deps, CHAIN_ID, { maxRanges: 100 });
        expect(outcome.skipped).toBeUndefined();
        await expectEverythingIndexed();
        expect(
          await metricValue(deps.metrics, 'stablebooks_rpc_requests_total', {
            method: 'eth_getLogs',
            outcome: 'error',
          }),
        ).toBeGreaterThan(0);
      });
    },
  );

  it.each([['message' as const], ['code' as const]])(
    'behavior: JSON-RPC rate-limit errors (%s) are retried with backoff',
    async (style) => {
      await resetIndex();
      await withProxy(async (proxy) => {
        proxy.set({ rateLimitNext: 3, rateLimitStyle: style });
        const deps = kit.deps([proxy.url]);
        const outcome = await indexChainPass(deps, CHAIN_ID, { maxRanges: 100 });
        expect(outcome.skipped).toBeUndefined();
        await expectEverythingIndexed();
        expect(
          await metricValue(deps.metrics, 'stablebooks_rpc_requests_total', { outcome: 'rate_limited' }),
        ).toBe(3);
      });
    },
  );

  it('behavior: a node that is behind (no block at the cursor) is not a reorg', async () => {
    await resetIndex();
    await indexChainPass(kit.deps(), CHAIN_ID, { maxRanges: 100 });
    await chain.mine(2);
    await indexChainPass(kit.deps(), CHAIN_ID);
    const before = await kit.rows();
    const cursor = await kit.cursor();
    expect(before.every((r) => r.state === 'final')).toBe(true);
    await withProxy(async (proxy) => {
      proxy.set({ blocksAbove: BigInt(cursor!.block_number) - 5n });
      const deps = kit.deps([proxy.url]);
      const outcome = await indexChainPass(deps, CHAIN_ID);
      expect(outcome).toMatchObject({ skipped: 'node_behind', orphaned: 0 });
      expect(await metricValue(deps.metrics, 'stablebooks_chain_reorgs_total')).toBe(0);
    });
    expect(await kit.rows()).toEqual(before);
    expect(await kit.cursor()).toEqual(cursor);
  });

  it('behavior: every URL down: the pass ends with an outcome, and no URL reaches logs or metrics', async () => {
    await withProxy(async (proxy) => {
      await proxy.goDown();
      const keyed = `${proxy.url}/v2/sekret-api-key-123`;
      const deps = kit.deps([keyed]);
      const lines = kit.logLines.length;
      const outcome = await indexChainPass(deps, CHAIN_ID);
      expect(outcome.skipped).toBe('rpc_error');
      expect(outcome.error).toBeDefined();
      expect(outcome.error).not.toContain('sekret');
      const logged = kit.logLines.slice(lines).join('');
      expect(logged).toContain('could not be read');
      expect(logged).not.toContain('sekret');
      expect(await deps.metrics.registry.metrics()).not.toContain('sekret');
      expect(deps.rpc.hosts).toEqual([`${new URL(proxy.url).protocol}//${new URL(proxy.url).host}/…`]);
    });
  });
});
