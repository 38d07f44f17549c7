import { createHash } from 'node:crypto';
import type { Hex } from 'viem';
import { seededRandom } from '../src/seededRandom.ts';
import { CheckoutStatus } from '../src/svc/models/checkoutStatus.ts';
import type { Shape } from './shapes.ts';
import type { Outcome, SimDeposit, SimIntent, SimPayout, SimStore, SimStray, SimToken } from './world.ts';

/**
 * The near-miss shapes (sim/shapes.ts): things that look like what a rule matches and are not,
 * or are and look like something else. Each draws from a stream of its own
 * (`world:<seed>:<shape>`) after the plain world is made, and only adds to it, so a shape that is
 * off changes nothing.
 *
 * - `near_equal_payouts`: groups of payouts of equal and near-equal amounts (1 base unit, a cent,
 *   half the fee bound, just over it) in one store and token, created minutes apart (inside each
 *   other's funding-match window), most with the create answer lost, so their fundings are matched
 *   by amount; and a payout of the same amount in another store (another custody wallet). A pair
 *   of equal lost payouts may learn their links in the other order (the first one's re-run late):
 *   rule 5 then books the first funding to the second payout once the grace is over (the next
 *   candidate with a link), which no one can tell apart; such a pair ends only in ways the chain
 *   alone decides (claimed, expired, open), where which pool is whose changes no balance.
 * - `custody_outflows`: the owner withdrawing from a custody wallet to a stranger, some of exactly
 *   a payout's amount while that payout waits for its create outcome (after its funding, inside
 *   its window), or hours later.
 * - `twin_intents`: two intents of the same amount and token in one merchant wallet at once (the
 *   same store, or two stores sharing the wallet), each paid by its own transaction, some by the
 *   same payer, in the same minute.
 * - `exact_stranger`: a stranger (or the intent's own payer, again) paying exactly an intent's
 *   amount (R, or what the wallet will receive) into its merchant wallet while it is open: a
 *   stray the service never names.
 *
 * The generator does not produce what the documented rule cannot get right (docs/decisions.md,
 * "Simulator"): a custody outflow that fits a waiting payout's amount and window and is mined
 * before that payout's own funding.
 */
export interface NearMissWorld {
  seed: string;
  stores: SimStore[];
  tokens: SimToken[];
  intents: SimIntent[];
  strays: SimStray[];
  payouts: SimPayout[];
  deposits: SimDeposit[];
  span: number;
}

/** Rule 5's bounds for a funding matched by amount, as docs/accounting.md states them. */
const CLOCK_SLACK_MS = 5 * 60_000;
const FUNDING_WINDOW_MS = 15 * 60_000;
/** How far a time the generator places may move (mining, the chain's whole seconds). */
const MARGIN_MS = 2 * 60_000;

/** The most a funding matched by amount may exceed A: 1 coin plus 1% of A, rounded up. */
export function maxFundingFee(A: bigint, decimals: number): bigint {
  return 10n ** BigInt(decimals) + (A * 100n + 9_999n) / 10_000n;
}

export function nearMissShapes(world: NearMissWorld, shapes: ReadonlySet<Shape>): void {
  const { seed } = world;
  const stream = (shape: Shape) => {
    const rnd = seededRandom(`world:${seed}:${shape}`);
    return {
      rnd,
      pick: <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T,
      int: (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1)),
    };
  };
  const addr = (label: string): Hex => `0x${hash(`${seed}:near:${label}`).slice(0, 40)}`;
  const txHash = (label: string): Hex => `0x${hash(`${seed}:tx:near:${label}`)}`;
  /** Equal lost payouts that may learn their links in the other order: no withdrawal near them. */
  const swappable = new Set<SimPayout>();

  const ensureDeposit = (storeId: string, token: SimToken) => {
    if (world.deposits.some((d) => d.storeId === storeId && d.token === token)) return;
    world.deposits.push({
      storeId,
      token,
      value: 10n ** BigInt(token.decimals) * 10n ** 9n,
      txHash: `0x${hash(`${seed}:tx:deposit:${storeId}:${token.symbol}`)}`,
      from: `0x${hash(`${seed}:owner:${storeId}`).slice(0, 40)}`,
    });
  };

  if (shapes.has('near_equal_payouts')) {
    const { rnd, pick, int } = stream('near_equal_payouts');
    const groups = int(1, 2);
    for (let g = 0; g < groups; g++) {
      const store = pick(world.stores);
      const token = pick(world.tokens);
      const unit = 10n ** BigInt(token.decimals);
      const base = ordinaryAmount(rnd, unit);
      const passOver = rnd() < 0.3;
      const count = passOver ? 2 : int(2, 3);
      let at = int(0, world.span / 2);
      for (let k = 0; k < count; k++) {
        const bound = maxFundingFee(base, token.decimals);
        const delta = passOver || k === 0 ? 0n : pick([0n, 1n, unit / 100n, bound / 2n, bound + 1n]);
        const A = rnd() < 0.5 || base <= delta ? base + delta : base - delta;
        const createdAt = at;
        at += int(30_000, 3 * 60_000);
        const lostAnswer = passOver || rnd() < 0.6;
        // The first of a pass-over pair learns its link late, the second early.
        const rerunAt = createdAt + (passOver && k === 0 ? int(25, 45) * 60_000 : int(20_000, 4 * 60_000));
        const end = passOver
          ? pick<SimPayout['end']>(['claimed', 'expired', 'open'])
          : pick<SimPayout['end']>(['claimed', 'cancelled', 'expired', 'cancel_after_claim', 'open']);
        const payout = makePayout(`${g}:${k}`, store, token, A, (A * BigInt(int(0, 100))) / 10_000n, {
          createdAt,
          lostAnswer,
          rerunAt,
          end,
          endAt: endTime(end, createdAt, int),
        });
        world.payouts.push({ ...payout, createReachesService: true });
        if (passOver) swappable.add(world.payouts[world.payouts.length - 1] as SimPayout);
        ensureDeposit(store.storeId, token);
      }
      // The same amount in another store: another custody wallet, never a candidate.
      const other = world.stores.find((s) => s.storeId !== store.storeId && s.custody !== store.custody);
      if (other && rnd() < 0.7) {
        const createdAt = Math.max(0, at - int(0, 4 * 60_000));
        const end = pick<SimPayout['end']>(['claimed', 'cancelled', 'expired', 'cancel_after_claim', 'open']);
        world.payouts.push(
          makePayout(`${g}:other`, other, token, base, (base * BigInt(int(0, 100))) / 10_000n, {
            createdAt,
            lostAnswer: rnd() < 0.6,
            rerunAt: createdAt + int(20_000, 4 * 60_000),
            end,
            endAt: endTime(end, createdAt, int),
          }),
        );
        ensureDeposit(other.storeId, token);
      }
    }
  }

  if (shapes.has('custody_outflows')) {
    const { rnd, pick, int } = stream('custody_outflows');
    const count = int(1, 3);
    for (let i = 0; i < count; i++) {
      const target = world.payouts.length > 0 && rnd() < 0.6 ? pick(world.payouts) : undefined;
      const store = target
        ? (world.stores.find((s) => s.storeId === target.storeId) as SimStore)
        : pick(world.stores);
      const token = target?.token ?? pick(world.tokens);
      const value = target?.A ?? ordinaryAmount(rnd, 10n ** BigInt(token.decimals));
      // While the target waits for its create outcome (after its funding), or hours later.
      const times = [0, 1, 2].map(() =>
        target
          ? target.createdAt + (rnd() < 0.6 ? int(MARGIN_MS, 12 * 60_000) : int(60, 300) * 60_000)
          : int(0, world.span),
      );
      const at = times.find((t) => safeWithdrawal(world, swappable, store, token, value, t, target));
      if (at === undefined) continue;
      world.strays.push({
        kind: 'owner_out',
        at,
        token: token.address,
        from: store.custody,
        to: addr(`withdrawal:${i}`),
        value,
        txHash: txHash(`withdrawal:${i}`),
      });
      ensureDeposit(store.storeId, token);
    }
  }

  if (shapes.has('twin_intents')) {
    const { rnd, pick, int } = stream('twin_intents');
    const pairs = int(1, 2);
    for (let j = 0; j < pairs; j++) {
      const store = pick(world.stores);
      const sharing = world.stores.filter((s) => s.merchant === store.merchant);
      const token = pick(world.tokens);
      const R = rnd() < 0.8 ? ordinaryAmount(rnd, 10n ** BigInt(token.decimals)) : BigInt(int(1, 3));
      const createdAt = int(0, world.span / 2);
      const samePayer = rnd() < 0.3;
      let paidAt = createdAt + int(30_000, 20 * 60_000);
      for (let k = 0; k < 2; k++) {
        const twinStore = k === 1 && rnd() < 0.5 ? pick(sharing) : store;
        const outcome = pick<Outcome>([
          'exact',
          'exact',
          'exact',
          'over',
          'accepted_under',
          'under_rejected',
          'kyt_rejected',
          'send_back',
          'timeout',
        ]);
        const route = outcome === 'send_back' ? 'direct' : pick<'direct' | 'temp'>(['direct', 'temp']);
        const created = k === 0 ? createdAt : createdAt + int(0, 10 * 60_000);
        // Both paid within two minutes of each other (the same block, at times).
        paidAt = Math.max(created + 30_000, paidAt + (k === 0 ? 0 : int(0, 120_000)));
        const P =
          outcome === 'over'
            ? R + R / 7n + 1n
            : outcome === 'accepted_under' || outcome === 'under_rejected'
              ? R > 1n
                ? R - 1n - (R * BigInt(int(0, 40))) / 100n
                : R
              : R;
        const F = route === 'temp' && P > 1n ? (P * BigInt(int(1, 300))) / 10_000n : 0n;
        world.intents.push(
          makeIntent({
            id: hash(`${seed}:near:twin:${j}:${k}`).slice(0, 24),
            store: twinStore,
            token,
            route,
            outcome,
            R,
            P,
            F,
            payer: addr(samePayer ? `twin-payer:${j}` : `twin-payer:${j}:${k}`),
            temp: addr(`twin-temp:${j}:${k}`),
            label: `twin:${j}:${k}`,
            createdAt: created,
            paidAt,
            decidedAt: paidAt + int(10_000, 10 * 60_000),
            later: int(60_000, 600_000),
            tracked: rnd() < 0.5,
            txHash,
          }),
        );
      }
    }
  }

  if (shapes.has('exact_stranger')) {
    const { rnd, pick, int } = stream('exact_stranger');
    const count = int(1, 2);
    for (let i = 0; i < count && world.intents.length > 0; i++) {
      const intent = pick(world.intents);
      const store = world.stores.find((s) => s.storeId === intent.storeId) as SimStore;
      const intoMerchant = intent.route === 'direct' ? intent.P : intent.P - intent.F;
      const value = rnd() < 0.5 ? intent.R : intoMerchant;
      if (value === 0n) continue;
      // While the intent is open: before its own payment, at times.
      const at = intent.createdAt + int(0, 25 * 60_000);
      const payerAgain = intent.route === 'direct' && rnd() < 0.3;
      world.strays.push({
        kind: 'stranger_in',
        at,
        token: intent.token.address,
        from: payerAgain ? intent.payer : addr(`stranger:${i}`),
        to: store.merchant,
        value,
        txHash: txHash(`stranger:${i}`),
      });
    }
  }

  function makePayout(
    label: string,
    store: SimStore,
    token: SimToken,
    A: bigint,
    F: bigint,
    times: Pick<SimPayout, 'createdAt' | 'lostAnswer' | 'rerunAt' | 'end' | 'endAt'>,
  ): SimPayout {
    return {
      referenceId: `ref-${seed}-near-${label}`,
      storeId: store.storeId,
      token,
      A,
      F,
      linkId: `cl_${hash(`${seed}:near:link:${label}`).slice(0, 24)}`,
      pool: addr(`pool:${label}`),
      recipient: addr(`recipient:${label}`),
      fundingTx: txHash(`funding:${label}`),
      sweepTx: txHash(`fee:${label}`),
      claimTx: txHash(`claim:${label}`),
      refundTx: txHash(`refund:${label}`),
      ...times,
    };
  }
}

/**
 * A withdrawal the documented rule 5 cannot take for a funding by mistake: no payout waiting for
 * its create outcome (lost answer) of that custody wallet and token fits it by amount and window,
 * except its target, after the target's own funding (which is mined first and so matched first),
 * and not one of a pair that may learn its links in the other order.
 */
function safeWithdrawal(
  world: NearMissWorld,
  swappable: ReadonlySet<SimPayout>,
  store: SimStore,
  token: SimToken,
  value: bigint,
  at: number,
  target: SimPayout | undefined,
): boolean {
  for (const q of world.payouts) {
    const custody = world.stores.find((s) => s.storeId === q.storeId)?.custody;
    if (!q.lostAnswer || custody !== store.custody || q.token !== token) continue;
    if (value < q.A || value - q.A > maxFundingFee(q.A, token.decimals)) continue;
    const from = q.createdAt - CLOCK_SLACK_MS - MARGIN_MS;
    const to = Math.max(q.createdAt, q.rerunAt) + FUNDING_WINDOW_MS + MARGIN_MS;
    if (at < from || at > to) continue;
    if (q !== target || swappable.has(q) || at < q.createdAt + MARGIN_MS) return false;
  }
  return true;
}

type IntentSpec = Pick<
  SimIntent,
  'id' | 'token' | 'route' | 'outcome' | 'R' | 'P' | 'F' | 'payer' | 'temp'
> & {
  store: SimStore;
  label: string;
  createdAt: number;
  paidAt: number;
  decidedAt: number;
  /** How long after the decision a second status follows (manual review, send-back). */
  later: number;
  tracked: boolean;
  txHash: (label: string) => Hex;
};

/** An intent as sim/world.ts makes one: the service's timeline for its outcome. */
function makeIntent(s: IntentSpec): SimIntent {
  const timeline: SimIntent['timeline'] = [{ at: s.createdAt, status: CheckoutStatus.CREATED }];
  if (s.outcome !== 'timeout') timeline.push({ at: s.paidAt, status: CheckoutStatus.ON_CHAIN });
  switch (s.outcome) {
    case 'exact':
    case 'over':
    case 'accepted_under':
      timeline.push({ at: s.decidedAt, status: CheckoutStatus.CONFIRMED });
      break;
    case 'manual_review':
      timeline.push({ at: s.decidedAt, status: CheckoutStatus.MANUAL_OPERATION });
      timeline.push({ at: s.decidedAt + s.later, status: CheckoutStatus.CONFIRMED });
      break;
    case 'under_rejected':
      timeline.push({ at: s.decidedAt, status: CheckoutStatus.UNDERPAID });
      break;
    case 'kyt_rejected':
      timeline.push({ at: s.decidedAt, status: CheckoutStatus.REJECTED });
      break;
    case 'send_back':
      timeline.push({ at: s.decidedAt, status: CheckoutStatus.SEND_BACK });
      timeline.push({ at: s.decidedAt + s.later, status: CheckoutStatus.REJECTED });
      break;
    case 'timeout':
      timeline.push({ at: s.createdAt + 30 * 60_000, status: CheckoutStatus.TIMEOUT });
      break;
  }
  const confirmed = timeline.some((t) => t.status === CheckoutStatus.CONFIRMED);
  return {
    id: s.id,
    storeId: s.store.storeId,
    token: s.token,
    route: s.route,
    outcome: s.outcome,
    R: s.R,
    P: s.P,
    F: s.F,
    payer: s.payer,
    temp: s.temp,
    tx1: s.txHash(`pay:${s.label}`),
    tx2: s.route === 'temp' && confirmed ? s.txHash(`sweep:${s.label}`) : null,
    returnTx: s.outcome === 'send_back' ? s.txHash(`return:${s.label}`) : null,
    createdAt: s.createdAt,
    trackedAtCreation: s.tracked,
    timeline,
  };
}

function endTime(end: SimPayout['end'], createdAt: number, int: (lo: number, hi: number) => number): number {
  return end === 'expired'
    ? createdAt + 14 * 86_400_000 + int(60_000, 3_600_000)
    : createdAt + int(3_600_000, 4 * 3_600_000);
}

/** A price: 2 to 5,000 coins and cents, or (one in five) above 2^53 base units. */
function ordinaryAmount(rnd: () => number, unit: bigint): bigint {
  if (rnd() < 0.2) return 2n ** 53n + BigInt(Math.floor(rnd() * 1e6)) + 2n * unit;
  return BigInt(2 + Math.floor(rnd() * 4_999)) * unit + (BigInt(Math.floor(rnd() * 100)) * unit) / 100n;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
