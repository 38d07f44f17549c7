import type { Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { createChainDouble, type SimTransfer } from '../../sim/chainDouble.ts';
import { SIM_CHAIN_ID_2 } from '../../sim/chainShapes.ts';
import { ALL_FAULTS, scheduleEvents } from '../../sim/schedule.ts';
import { parseShapes } from '../../sim/shapes.ts';
import { generateWorld, SIM_CHAIN_ID } from '../../sim/world.ts';

/** The chain's shapes (sim/chainShapes.ts) and the chain double's history-changing reorgs. */
const hex = (n: number, width: number): Hex => `0x${n.toString(16).padStart(width, '0')}`;
const transfer = (n: number, value = 10n): SimTransfer => ({
  token: hex(0xaa, 40),
  from: hex(1, 40),
  to: hex(2, 40),
  value,
  txHash: hex(n, 64),
});

/** The transaction hashes of each block of the chain, from block 1, by eth_getLogs. */
async function blocks(chain: ReturnType<typeof createChainDouble>): Promise<string[][]> {
  const logs = (await chain.rpc().client.request({
    method: 'eth_getLogs',
    params: [
      { address: [hex(0xaa, 40)], topics: [], fromBlock: '0x1', toBlock: hex(Number(chain.head()), 1) },
    ],
  } as never)) as Array<{ blockNumber: Hex; transactionHash: string; logIndex: Hex }>;
  const out: string[][] = Array.from({ length: Number(chain.head()) }, () => []);
  for (const l of logs) out[Number(l.blockNumber) - 1]![Number(l.logIndex)] = l.transactionHash;
  return out;
}

describe('chain shapes', () => {
  it('behavior: a world without the chain shapes has no reorg plans and one chain', () => {
    for (const seed of ['1', '2', '3']) {
      const world = generateWorld(seed, { intents: 8, shapes: parseShapes('none') });
      expect(world.reorgs).toEqual([]);
      expect(new Set(world.tokens.map((t) => t.chainId))).toEqual(new Set([SIM_CHAIN_ID]));
    }
  });

  it('behavior: each shape draws from its own stream: turning one on leaves the others as they were', () => {
    const drop = generateWorld('5', { intents: 8, shapes: parseShapes('reorg_drop') });
    const both = generateWorld('5', { intents: 8, shapes: parseShapes('reorg_drop,reorg_deep') });
    expect(both.reorgs.filter((r) => r.shape === 'reorg_drop')).toEqual(drop.reorgs);
    const none = generateWorld('5', { intents: 8, shapes: parseShapes('none') });
    expect(drop.intents).toEqual(none.intents);
  });

  it('behavior: two_chains gives each chain a 6- and an 18-decimal token and puts activity on the second', () => {
    const all = Array.from({ length: 12 }, (_, i) =>
      generateWorld(String(i + 1), { intents: 8, shapes: parseShapes('two_chains') }),
    );
    // Half the worlds take the shape; the others keep one chain.
    const worlds = all.filter((w) => w.tokens.some((t) => t.chainId === SIM_CHAIN_ID_2));
    expect(worlds.length).toBeGreaterThan(2);
    expect(worlds.length).toBeLessThan(all.length);
    for (const world of worlds)
      for (const chainId of [SIM_CHAIN_ID, SIM_CHAIN_ID_2])
        expect(
          world.tokens
            .filter((t) => t.chainId === chainId)
            .map((t) => t.decimals)
            .sort(),
        ).toEqual([18, 6]);
    expect(worlds.some((w) => w.intents.some((i) => i.token.chainId === SIM_CHAIN_ID_2))).toBe(true);
    expect(worlds.some((w) => w.payouts.some((p) => p.token.chainId === SIM_CHAIN_ID_2))).toBe(true);
  });

  it('behavior: near_equal_second_chain moves near-equal payouts to the second chain; without it they stay on the first', () => {
    const onSecond = (shapes: string) =>
      Array.from({ length: 40 }, (_, i) =>
        generateWorld(String(i + 1), { intents: 8, shapes: parseShapes(shapes) }),
      ).flatMap((w) => w.payouts.filter((p) => p.createReachesService && p.token.chainId === SIM_CHAIN_ID_2));
    expect(onSecond('two_chains,near_equal_payouts')).toEqual([]);
    const moved = onSecond('two_chains,near_equal_payouts,near_equal_second_chain');
    expect(moved.length).toBeGreaterThan(5);
  });

  it('behavior: reorg plans become reorg events on their chain naming their change, after the target is mined', () => {
    const shapes = parseShapes('reorg_drop,reorg_remine,reorg_replace,reorg_deep');
    let planned = 0;
    for (const seed of ['7', '8', '9']) {
      const world = generateWorld(seed, { intents: 8, shapes });
      const events = scheduleEvents(world, seed, { faults: new Set(ALL_FAULTS), maxEvents: 1_000 });
      for (const [i, e] of events.entries()) {
        if (e.k !== 'reorg' || !e.change) continue;
        const plan = world.reorgs.find((r) => r.target === e.change?.target);
        expect(plan).toBeDefined();
        expect(e.chain).toBe(plan?.chainId);
        expect(e.change.kind).toBe(plan?.change);
        expect(events.slice(0, i).some((m) => m.k === 'mine')).toBe(true);
        planned++;
      }
    }
    expect(planned).toBeGreaterThan(0);
  });

  it('behavior: the double reaches down to the target and drops, moves or replaces it', async () => {
    const build = () => {
      const chain = createChainDouble(SIM_CHAIN_ID, 2);
      chain.send(transfer(1));
      chain.send(transfer(2));
      chain.mine(1n);
      chain.mine(2n);
      chain.mine(3n);
      return chain;
    };
    const [t1, t2] = [transfer(1).txHash, transfer(2).txHash];

    const dropped = build();
    const record = dropped.reorg(1, { kind: 'drop', target: t1 });
    expect(record?.replaced.map((b) => b.number)).toEqual([1n, 2n, 3n]);
    expect(dropped.blockOf(t1)).toBeUndefined();
    expect(await blocks(dropped)).toEqual([[t2], [], []]);

    const later = build();
    later.reorg(1, { kind: 'remine_later', target: t1 });
    later.mine(4n);
    expect(later.blockOf(t1)).toBe(4n);

    const moved = build();
    moved.reorg(1, { kind: 'remine_index', target: t1 });
    expect(await blocks(moved)).toEqual([[t2, t1], [], []]);

    const replaced = build();
    const other = transfer(9, 11n);
    replaced.reorg(1, { kind: 'replace', target: t2, replacement: other });
    expect(await blocks(replaced)).toEqual([[t1, other.txHash], [], []]);
    expect(replaced.balanceOf(other.token, other.to)).toBe(21n);

    const alone = createChainDouble(SIM_CHAIN_ID, 2);
    alone.send(transfer(1));
    alone.mine(1n);
    alone.reorg(1, { kind: 'remine_index', target: t1, filler: transfer(7, 1n) });
    expect(await blocks(alone)).toEqual([[transfer(7).txHash, t1]]);
  });
});
