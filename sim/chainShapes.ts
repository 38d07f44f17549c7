import { createHash } from 'node:crypto';
import type { Hex } from 'viem';
import { seededRandom } from '../src/seededRandom.ts';
import type { ReorgChange, SimTransfer } from './chainDouble.ts';
import { worldTransfers } from './schedule.ts';
import type { Shape } from './shapes.ts';
import type { SimToken, World } from './world.ts';

/**
 * The chain's shapes (sim/shapes.ts): reorgs that change history, a reorg beyond finality, and a
 * second chain. Each shape decides with a random stream of its own (`world:<seed>:<shape>`), so a
 * shape that is off draws nothing and changes nothing: `--shapes none` is the old world.
 *
 * Glossary
 * - plan: one reorg a shape adds, carried out by the chain double (sim/chainDouble.ts) when the
 *   scheduler's event for it comes;
 * - target: the transaction whose block the reorg reaches and whose inclusion it changes;
 * - when: the target's state at the reorg, as the indexer saw it: not read yet (`before_index`),
 *   read but not final (`after_index`), final and booked (`after_final`: the reorg is beyond
 *   finality, and the product must say so).
 */

/** The second chain of the two_chains shape: Base, whose id the service's Chain enum knows (5). */
export const SIM_CHAIN_ID_2 = 8453;

export interface SimReorgPlan {
  shape: 'reorg_drop' | 'reorg_remine' | 'reorg_replace' | 'reorg_deep' | 'funding_resent';
  chainId: number;
  target: Hex;
  change: ReorgChange['kind'];
  when: 'before_index' | 'after_index' | 'after_final';
  /** Blocks replaced at least; the reorg reaches down to the target's block too. */
  depth: number;
  /** replace: the transaction mined instead, a new one the oracle knows (judged as a stray). */
  replacement?: SimTransfer;
  /** remine_index: a transfer no watched wallet is party to, put before a target alone in its block. */
  filler?: SimTransfer;
}

const REORG_SHAPES = ['reorg_drop', 'reorg_remine', 'reorg_replace', 'reorg_deep'] as const;

/** Applies the chain's shapes that are on to a generated world (two_chains first: plans name a chain). */
export function applyChainShapes(world: World, shapes: ReadonlySet<Shape>): void {
  if (shapes.has('two_chains')) twoChains(world, shapes.has('near_equal_second_chain'));
  for (const shape of REORG_SHAPES) if (shapes.has(shape)) reorgPlans(world, shape);
}

/**
 * two_chains: the second chain's USDT (6 decimals) and USDC (18), at addresses of their own; the
 * stores' wallets are the same addresses on both chains (as one key is on every EVM chain), so a
 * query that forgets the chain mixes them. About half the intents, payouts and strangers' transfers
 * move to the second chain, each payout with an owner's deposit there to fund it (near-equal
 * payouts only with near_equal_second_chain). Half the worlds with the shape on have the second chain.
 */
function twoChains(world: World, nearEqualToo: boolean): void {
  const rnd = seededRandom(`world:${world.seed}:two_chains`);
  // Half the worlds: a world of one chain stays the common case (and costs one chain job a pass).
  if (rnd() < 0.5) return;
  const on2 = new Map<string, SimToken>();
  for (const t of world.tokens.filter((t) => !isSecond(t))) {
    const token = { ...t, address: address(world.seed, `chain2:token:${t.symbol}`), chainId: SIM_CHAIN_ID_2 };
    on2.set(t.symbol, token);
  }
  world.tokens.push(...on2.values());
  const second = (t: SimToken) => on2.get(t.symbol) as SimToken;
  for (const intent of world.intents) if (rnd() < 0.5) intent.token = second(intent.token);
  // A bundled intent (bundle_payment) is paid by its head's transfer: it is on the head's chain,
  // whatever its own draw said (the draws stay as they were).
  const byId = new Map(world.intents.map((i) => [i.id, i]));
  for (const intent of world.intents) {
    const head = intent.bundledInto === undefined ? undefined : byId.get(intent.bundledInto);
    if (head) intent.token = head.token;
  }
  for (const stray of world.strays) {
    const token = world.tokens.find((t) => t.address === stray.token);
    if (token && rnd() < 0.5) stray.token = second(token).address;
  }
  for (const p of world.payouts) {
    // Near-equal payouts (sim/nearMisses.ts) stay on the first chain, with the withdrawals and
    // deposits their judging was placed around (the draw is made all the same), unless
    // near_equal_second_chain: then a withdrawal of their amount is on the other chain.
    if (rnd() >= 0.5 || (p.createReachesService && !nearEqualToo)) continue;
    p.token = second(p.token);
    if (!world.deposits.some((d) => d.storeId === p.storeId && d.token === p.token))
      world.deposits.push({
        storeId: p.storeId,
        token: p.token,
        value: 10n ** BigInt(p.token.decimals) * 10n ** 9n,
        txHash: txHash(world.seed, `chain2:deposit:${p.storeId}:${p.token.symbol}`),
        from: address(world.seed, `owner:${p.storeId}`),
      });
  }
}

function isSecond(t: SimToken): boolean {
  return t.chainId === SIM_CHAIN_ID_2;
}

/**
 * One or two reorgs of a shape. reorg_drop, reorg_remine and reorg_replace change a transfer with
 * a simple story (a stranger's payment, an owner's withdrawal, a direct payment never sent back,
 * a routed payment's sweep; never a custody wallet's), at any of the three moments; reorg_deep
 * replaces, with the same transfers, the block of any transfer once it is final and booked.
 */
function reorgPlans(world: World, shape: (typeof REORG_SHAPES)[number]): void {
  const rnd = seededRandom(`world:${world.seed}:${shape}`);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const transfers = worldTransfers(world);
  const custody = new Set(world.stores.map((s) => s.custody));
  const intents = new Map(world.intents.map((i) => [i.id, i]));
  const chainOf = (token: string) => world.tokens.find((t) => t.address === token)?.chainId;
  const simple = [...transfers].filter(([key, t]) => {
    if (custody.has(t.from) || custody.has(t.to) || chainOf(t.token) === undefined) return false;
    if (key.startsWith('stray:') || key.startsWith('sweep:')) return true;
    const intent = key.startsWith('pay:') ? intents.get(key.slice(4)) : undefined;
    // Not a payment in pieces or bundles (sim/piecesShapes.ts): a reorg of one piece is a story
    // of its own, not generated yet.
    return (
      intent?.route === 'direct' &&
      intent.returnTx === null &&
      !intent.pieces &&
      !world.intents.some((b) => b.bundledInto === intent.id)
    );
  });
  // A transfer another plan changes already is no target: the first change would leave the
  // second nothing to change.
  const taken = new Set(world.reorgs.map((r) => r.target));
  const candidates = (
    shape === 'reorg_deep' ? [...transfers].filter(([, t]) => chainOf(t.token) !== undefined) : simple
  ).filter(([, t]) => !taken.has(t.txHash));
  const count = rnd() < 0.5 ? 1 : 2;
  for (let n = 0; n < count && candidates.length > 0; n++) {
    const [[key, target]] = candidates.splice(Math.floor(rnd() * candidates.length), 1) as [
      [string, SimTransfer & { at: number }],
    ];
    const chainId = chainOf(target.token) as number;
    const base = { shape, chainId, target: target.txHash };
    const label = `${shape}:${n}`;
    switch (shape) {
      case 'reorg_deep':
        world.reorgs.push({ ...base, change: 'none', when: 'after_final', depth: int(3, 8) });
        break;
      case 'reorg_drop':
        world.reorgs.push({ ...base, change: 'drop', when: moment(pick), depth: int(1, 2) });
        break;
      case 'reorg_remine': {
        const change = pick(['remine_later', 'remine_index'] as const);
        world.reorgs.push({
          ...base,
          change,
          when: moment(pick),
          depth: int(1, 2),
          filler: {
            token: target.token,
            from: address(world.seed, `filler:from:${label}`),
            to: address(world.seed, `filler:to:${label}`),
            value: 1n,
            txHash: txHash(world.seed, `filler:${label}`),
          },
        });
        break;
      }
      case 'reorg_replace': {
        // Another amount, another recipient (another store's merchant wallet, or nobody we watch),
        // or both; never the same transfer.
        const what = pick(['amount', 'recipient', 'both'] as const);
        const merchants = [...new Set(world.stores.map((s) => s.merchant))].filter(
          (m) => m !== target.to && m !== target.from,
        );
        const to =
          what === 'amount'
            ? target.to
            : merchants.length > 0 && rnd() < 0.5
              ? pick(merchants)
              : address(world.seed, `replaced:to:${label}`);
        const value =
          what === 'recipient'
            ? target.value
            : target.value > 1n && rnd() < 0.5
              ? target.value / 2n
              : target.value + target.value / 3n + 1n;
        world.reorgs.push({
          ...base,
          change: 'replace',
          when: moment(pick),
          depth: int(1, 2),
          replacement: {
            token: target.token,
            from: target.from,
            to,
            value,
            txHash: txHash(world.seed, `replacement:${label}:${key}`),
          },
        });
        break;
      }
    }
  }
}

function moment(pick: <T>(xs: readonly T[]) => T): SimReorgPlan['when'] {
  return pick(['before_index', 'after_index', 'after_final'] as const);
}

/** The replacement transactions the world's reorgs may mine: known to the oracle, judged as strays. */
export function worldReplacements(world: World): SimTransfer[] {
  return world.reorgs.flatMap((r) => (r.replacement ? [r.replacement] : []));
}

function address(seed: string, label: string): Hex {
  return `0x${hash(`${seed}:${label}`).slice(0, 40)}`;
}

function txHash(seed: string, label: string): Hex {
  return `0x${hash(`${seed}:tx:${label}`)}`;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
