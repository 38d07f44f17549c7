import { createHash } from 'node:crypto';
import type { Hex } from 'viem';
import { formatDecimalAmount } from '../src/money/decimalAmount.ts';
import { seededRandom } from '../src/seededRandom.ts';
import { CheckoutStatus, isTerminalCheckoutStatus } from '../src/svc/models/checkoutStatus.ts';
import { applyChainShapes, type SimReorgPlan } from './chainShapes.ts';
import { nearMissShapes } from './nearMisses.ts';
import { fundingResent, piecesShapes } from './piecesShapes.ts';
import type { Shape } from './shapes.ts';

/**
 * A seeded world: the stores and their wallets, the tokens, and what happens in it (checkout
 * intents with every route and outcome, strangers' and owners' transfers), as ground truth the
 * scheduler plays to the product and the oracle judges its books against. The same seed gives the
 * same world.
 *
 * Glossary
 * - R, P, F, N: requested amount, actual paid amount, service fee, net (P - F), in base units;
 * - route: `direct` (the buyer pays the merchant wallet, no fee) or `temp` (the buyer pays a
 *   temporary wallet; the service sweeps N to the merchant wallet in a second transaction);
 * - stray: a transfer no intent explains (a stranger's payment, the owner's withdrawal, a
 *   look-alike token).
 */
/**
 * Sepolia's id: claim-link create names the chain by the service's Chain enum, which has a value
 * for it; the registry's entry is replaced by the world's tokens and a finality depth of 2.
 */
export const SIM_CHAIN_ID = 11_155_111;

export interface SimToken {
  symbol: 'USDT' | 'USDC';
  address: Hex;
  decimals: number;
  /** The chain the token lives on: SIM_CHAIN_ID, or SIM_CHAIN_ID_2 with the two_chains shape. */
  chainId: number;
}

export interface SimStore {
  storeId: string;
  apiKey: string;
  apiSecret: string;
  merchant: Hex;
  custody: Hex;
}

export type Outcome =
  | 'exact'
  | 'over'
  | 'accepted_under'
  | 'under_rejected'
  | 'kyt_rejected'
  | 'manual_review'
  | 'send_back'
  | 'timeout';

export interface SimIntent {
  id: string;
  storeId: string;
  token: SimToken;
  route: 'direct' | 'temp';
  outcome: Outcome;
  R: bigint;
  P: bigint;
  F: bigint;
  payer: Hex;
  temp: Hex;
  /** buyer -> merchant (direct) or buyer -> temporary wallet (temp). */
  tx1: Hex;
  /** temporary wallet -> merchant, N (temp route, confirmed). */
  tx2: Hex | null;
  /** merchant -> buyer, P (a direct payment sent back). */
  returnTx: Hex | null;
  /** When the intent is created (ms after the world's start) and whether stablebooks created it. */
  createdAt: number;
  trackedAtCreation: boolean;
  /** The service's states: each from `at` (ms) on. */
  timeline: Array<{ at: number; status: CheckoutStatus }>;
  /**
   * fiat_priced: priced in a fiat currency the service converted at its rate into R (report
   * context: rule 1 copies it into its entry's metadata; no money).
   */
  fiat?: SimFiat;
  /** decimal_forms: the service writes this intent's amounts in forms other than the canonical one. */
  decimalForms?: true;
  /** webhooks_lost: the service delivers none of this intent's checkout webhooks. */
  webhooksLost?: true;
  /** fee_mismatch: the net_income_amount the service reports, other than P - F (the chain moves P - F). */
  reportedNet?: bigint;
  /**
   * payment_pieces: the payment's further transfers after tx1 (to the merchant wallet when direct,
   * to the temporary wallet when routed), each `delayMs` after tx1; tx1 carries P less their sum.
   */
  pieces?: PaymentPiece[];
  /** payment_pieces: the transaction the service names as tx_hash (tx1 when absent). */
  namedTx?: Hex;
  /** bundle_payment: the intent whose tx1 pays this one's P too (one transfer of both sums). */
  bundledInto?: string;
  /** cancelled_return: this long after CANCELED the service sends the direct payment back (returnTx). */
  returnAfterCancelMs?: number;
}

/** One more transfer of a payment in pieces (sim/piecesShapes.ts). */
export interface PaymentPiece {
  value: bigint;
  txHash: Hex;
  from: Hex;
  delayMs: number;
}

/** A fiat price as the service reports it: Currency enum value, symbol, cents, fiat to coin rate. */
export interface SimFiat {
  currency: number;
  symbol: string | null;
  cents: bigint;
  rate: string;
}

export interface SimStray {
  /** owner_move: the owner moves money between two watched wallets (custody, merchant, stores). */
  kind: 'stranger_in' | 'owner_out' | 'between_stores' | 'lookalike' | 'owner_move';
  at: number;
  token: Hex;
  from: Hex;
  to: Hex;
  value: bigint;
  txHash: Hex;
}

/**
 * A claim-link payout: created by stablebooks (its first answer maybe lost, then run again with
 * the same reference id), funded from the store's custody wallet (A + F to the link's pool, F swept
 * to the service), then claimed, cancelled (perhaps after its claim), expired after 14 days, or
 * left open.
 */
export interface SimPayout {
  referenceId: string;
  storeId: string;
  token: SimToken;
  A: bigint;
  F: bigint;
  linkId: string;
  pool: Hex;
  recipient: Hex;
  fundingTx: Hex;
  sweepTx: Hex;
  claimTx: Hex;
  refundTx: Hex;
  createdAt: number;
  /** The first create reaches the service, which funds the link, but its answer is lost. */
  lostAnswer: boolean;
  rerunAt: number;
  end: 'claimed' | 'cancelled' | 'expired' | 'cancel_after_claim' | 'open';
  endAt: number;
  /** decimal_forms: the create answer's amounts in forms other than the canonical one. */
  decimalForms?: true;
  /**
   * How the service pays the refund back to custody (shape refund_pieces): pieces in order, each
   * `delayMs` after the cancel or expiry; pieces of one transaction share its hash. Their sum may
   * fall short of A (a refund that never completes) or pass it (an overpayment returned). Absent:
   * one transfer of A at once (`refundTx`).
   */
  refundPieces?: RefundPiece[];
  /** The service refunds the link this long after its claim too (shape claimed_then_refunded). */
  refundAfterClaimMs?: number;
  /**
   * Its first create reaches the service (no 5xx, 429 or crash before it acts; a lost answer
   * still may happen): near-equal payouts, whose fundings are matched by amount. A create that
   * reaches the service only at a later run funds the link then, and a near-equal payout's
   * funding mined meanwhile is matched to it by amount: the product keeps that assignment when
   * the later answer names the real funding (docs/decisions.md, a gap left open).
   */
  createReachesService?: true;
  /**
   * funding_pieces: the funding's further transfers from custody to the pool after fundingTx, each
   * `delayMs` after it: the rest of a funding in two parts (`split`), or the whole funding sent a
   * second time (`double`, refunded with the link's principal when cancelled or expired).
   */
  fundingPieces?: FundingPiece[];
  fundingKind?: 'split' | 'double';
  /** cancel_races_claim: the service answers the cancel with success although the claim is on chain. */
  cancelRacesClaim?: true;
  /**
   * funding_resent: a reorg drops the funding after the link was sent (sim/piecesShapes.ts plans
   * it) and the service sends the whole funding again under this hash, `delayMs` after the drop.
   */
  fundingResend?: { txHash: Hex; delayMs: number };
}

export interface FundingPiece {
  value: bigint;
  txHash: Hex;
  delayMs: number;
}

export interface RefundPiece {
  value: bigint;
  txHash: Hex;
  delayMs: number;
}

/** The owner's deposit into a custody wallet, so payouts have money to fund them. */
export interface SimDeposit {
  storeId: string;
  token: SimToken;
  value: bigint;
  txHash: Hex;
  from: Hex;
}

export interface World {
  seed: string;
  tokens: SimToken[];
  /** A contract that copies a real token's symbol but is not in the registry: never money. */
  lookalike: Hex;
  stores: SimStore[];
  intents: SimIntent[];
  strays: SimStray[];
  payouts: SimPayout[];
  deposits: SimDeposit[];
  /** The service's own wallet, where funding fees are swept. */
  feeWallet: Hex;
  /** How long the world's activity lasts (ms); the scheduler's horizon before quiescence. */
  span: number;
  /** Reorgs that change history (sim/chainShapes.ts): none without the reorg shapes. */
  reorgs: SimReorgPlan[];
}

export interface WorldOptions {
  /** About how many intents (the world picks up to this many). */
  intents: number;
  /** The service contradicts itself: a confirmed intent later CANCELED (and maybe confirmed again). */
  contradict?: boolean;
  /** The shapes this world may take (sim/shapes.ts); none when absent. */
  shapes?: ReadonlySet<Shape>;
}

/**
 * A store's par policy (STORES_FILE `par`): every other store values both coins at 1 USD, the
 * others have none and import no rates, so their books are unvalued and each day with postings is
 * a `valuation_rate_missing` finding. By position, not drawn, so no world changes.
 */
export function storePar(world: Pick<World, 'stores'>, storeId: string): Map<string, string> {
  const index = world.stores.findIndex((s) => s.storeId === storeId);
  return index % 2 === 0
    ? new Map([
        ['USDT', '1'],
        ['USDC', '1'],
      ])
    : new Map();
}

export function generateWorld(seed: string, options: WorldOptions): World {
  const rnd = seededRandom(`world:${seed}`);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const addr = (label: string): Hex => `0x${hash(`${seed}:${label}`).slice(0, 40)}`;
  const txHash = (label: string): Hex => `0x${hash(`${seed}:tx:${label}`)}`;

  const tokens: SimToken[] = [
    { symbol: 'USDT', address: addr('token:USDT'), decimals: 6, chainId: SIM_CHAIN_ID },
    { symbol: 'USDC', address: addr('token:USDC'), decimals: 18, chainId: SIM_CHAIN_ID },
  ];
  const stores: SimStore[] = [];
  const storeCount = int(1, 3);
  for (let i = 0; i < storeCount; i++) {
    stores.push({
      storeId: `st_${i + 1}`,
      apiKey: `key_${i + 1}_${hash(`${seed}:key:${i}`).slice(0, 8)}`,
      apiSecret: `secret_${hash(`${seed}:secret:${i}`).slice(0, 24)}`,
      merchant: addr(`merchant:${i}`),
      custody: addr(`custody:${i}`),
    });
  }
  // Two stores may share one merchant wallet (the same role): a shape merchants write.
  const [first, second] = stores;
  if (first && second && rnd() < 0.25) second.merchant = first.merchant;

  const span = 6 * 3_600_000;
  const intents: SimIntent[] = [];
  const count = int(1, Math.max(1, options.intents));
  for (let i = 0; i < count; i++) {
    const store = pick(stores);
    const token = pick(tokens);
    const outcome = pick<Outcome>([
      'exact',
      'exact',
      'over',
      'accepted_under',
      'under_rejected',
      'kyt_rejected',
      'manual_review',
      'send_back',
      'timeout',
    ]);
    // Send-back is the service returning a direct payment; a routed one never reaches the merchant.
    const route = outcome === 'send_back' ? 'direct' : pick<'direct' | 'temp'>(['direct', 'temp']);
    const R = amount(rnd, token.decimals);
    const P =
      outcome === 'over'
        ? R + amount(rnd, token.decimals) / 7n + 1n
        : outcome === 'accepted_under' || outcome === 'under_rejected'
          ? R > 1n
            ? R - 1n - (R * BigInt(int(0, 40))) / 100n
            : R
          : R;
    const F = route === 'temp' && P > 1n ? (P * BigInt(int(1, 300))) / 10_000n : 0n;
    const createdAt = int(0, span / 2);
    const paidAt = createdAt + int(30_000, 20 * 60_000);
    const decidedAt = paidAt + int(10_000, 10 * 60_000);
    const timeline: SimIntent['timeline'] = [{ at: createdAt, status: CheckoutStatus.CREATED }];
    const paying = outcome !== 'timeout';
    if (paying) timeline.push({ at: paidAt, status: CheckoutStatus.ON_CHAIN });
    switch (outcome) {
      case 'exact':
      case 'over':
      case 'accepted_under':
        timeline.push({ at: decidedAt, status: CheckoutStatus.CONFIRMED });
        break;
      case 'manual_review':
        timeline.push({ at: decidedAt, status: CheckoutStatus.MANUAL_OPERATION });
        timeline.push({ at: decidedAt + int(60_000, 3_600_000), status: CheckoutStatus.CONFIRMED });
        break;
      case 'under_rejected':
        timeline.push({ at: decidedAt, status: CheckoutStatus.UNDERPAID });
        break;
      case 'kyt_rejected':
        timeline.push({ at: decidedAt, status: CheckoutStatus.REJECTED });
        break;
      case 'send_back':
        timeline.push({ at: decidedAt, status: CheckoutStatus.SEND_BACK });
        timeline.push({ at: decidedAt + int(60_000, 600_000), status: CheckoutStatus.REJECTED });
        break;
      case 'timeout':
        timeline.push({ at: createdAt + 30 * 60_000, status: CheckoutStatus.TIMEOUT });
        break;
    }
    const last = timeline[timeline.length - 1];
    if (options.contradict && last?.status === CheckoutStatus.CONFIRMED && rnd() < 0.3) {
      const cancelledAt = last.at + int(60_000, 2 * 3_600_000);
      timeline.push({ at: cancelledAt, status: CheckoutStatus.CANCELED });
      if (rnd() < 0.5)
        timeline.push({ at: cancelledAt + int(60_000, 3_600_000), status: CheckoutStatus.CONFIRMED });
    }
    const confirmed = timeline.some((s) => s.status === CheckoutStatus.CONFIRMED);
    intents.push({
      id: hash(`${seed}:intent:${i}`).slice(0, 24),
      storeId: store.storeId,
      token,
      route,
      outcome,
      R,
      P,
      F,
      payer: addr(`payer:${i}`),
      temp: addr(`temp:${i}`),
      tx1: txHash(`pay:${i}`),
      tx2: route === 'temp' && confirmed ? txHash(`sweep:${i}`) : null,
      returnTx: outcome === 'send_back' ? txHash(`return:${i}`) : null,
      createdAt,
      trackedAtCreation: rnd() < 0.5,
      timeline,
    });
  }

  const strays: SimStray[] = [];
  const strayCount = int(0, 3);
  for (let i = 0; i < strayCount; i++) {
    const store = pick(stores);
    const other = pick(stores);
    const token = pick(tokens);
    const kind = pick<SimStray['kind']>(['stranger_in', 'owner_out', 'between_stores', 'lookalike']);
    const value = amount(rnd, token.decimals) / 3n + 1n;
    const base = { at: int(0, span), value, txHash: txHash(`stray:${i}`) };
    if (kind === 'stranger_in')
      strays.push({ ...base, kind, token: token.address, from: addr(`stranger:${i}`), to: store.merchant });
    else if (kind === 'lookalike')
      strays.push({
        ...base,
        kind,
        token: addr('token:lookalike'),
        from: addr(`stranger:${i}`),
        to: store.merchant,
      });
    else if (kind === 'between_stores' && other.merchant !== store.merchant)
      strays.push({ ...base, kind, token: token.address, from: addr(`stranger:${i}`), to: store.merchant });
    else
      strays.push({
        ...base,
        kind: 'owner_out',
        token: token.address,
        from: store.merchant,
        to: addr(`owner:${i}`),
      });
  }
  const payouts: SimPayout[] = [];
  const deposits: SimDeposit[] = [];
  const payoutCount = int(0, 3);
  for (let i = 0; i < payoutCount; i++) {
    const store = pick(stores);
    const token = pick(tokens);
    const A = amount(rnd, token.decimals) / 5n + 1n;
    // At most 1% of the amount: within what a funding matched by amount may carry as its fee
    // (src/settlement/claimLinkFunding.ts), as the service's fees are (docs/decisions.md).
    const F = (A * BigInt(int(0, 100))) / 10_000n;
    const createdAt = int(0, span / 2);
    const end = pick<SimPayout['end']>(['claimed', 'cancelled', 'expired', 'cancel_after_claim', 'open']);
    const lostAnswer = rnd() < 0.3;
    payouts.push({
      referenceId: `ref-${seed}-${i}`,
      storeId: store.storeId,
      token,
      A,
      F,
      linkId: `cl_${hash(`${seed}:link:${i}`).slice(0, 24)}`,
      pool: addr(`pool:${i}`),
      recipient: addr(`recipient:${i}`),
      fundingTx: txHash(`funding:${i}`),
      sweepTx: txHash(`fee:${i}`),
      claimTx: txHash(`claim:${i}`),
      refundTx: txHash(`refund:${i}`),
      createdAt,
      lostAnswer,
      rerunAt: createdAt + int(60_000, 3_600_000),
      end,
      endAt:
        end === 'expired'
          ? createdAt + 14 * 86_400_000 + int(60_000, 3_600_000)
          : createdAt + int(3_600_000, 4 * 3_600_000),
    });
    if (!deposits.some((d) => d.storeId === store.storeId && d.token === token))
      deposits.push({
        storeId: store.storeId,
        token,
        value: 10n ** BigInt(token.decimals) * 10n ** 9n,
        txHash: txHash(`deposit:${store.storeId}:${token.symbol}`),
        from: addr(`owner:${store.storeId}`),
      });
  }
  applyShapes({ seed, stores, intents, strays, payouts, tokens, span, addr, txHash }, options.shapes);
  const lookalike = addr('token:lookalike');
  const shapes = options.shapes ?? new Set<Shape>();
  serviceShapes(seed, shapes, { intents, payouts, lookalike });
  // The near-miss shapes (sim/nearMisses.ts): added after, from streams of their own.
  nearMissShapes(
    { seed, stores, tokens, intents, strays, payouts, deposits, span },
    options.shapes ?? new Set(),
  );
  const world: World = {
    seed,
    tokens,
    lookalike,
    stores,
    intents,
    strays,
    payouts,
    deposits,
    feeWallet: addr('service:fees'),
    span,
    reorgs: [],
  };
  // Money in pieces and bundles: before the chain's shapes, whose reorgs keep away from them.
  piecesShapes(world, options.shapes ?? new Set());
  applyChainShapes(world, options.shapes ?? new Set());
  // After two_chains, which may move a payout to the second chain: its reorg names the chain.
  fundingResent(world, options.shapes ?? new Set());
  feeMismatch(world, options.shapes ?? new Set());
  return world;
}

interface ShapeInput {
  seed: string;
  stores: SimStore[];
  intents: SimIntent[];
  strays: SimStray[];
  payouts: SimPayout[];
  tokens: SimToken[];
  span: number;
  addr: (label: string) => Hex;
  txHash: (label: string) => Hex;
}

/**
 * The wallet and refund shapes (sim/shapes.ts), each drawn from a random stream of its own, after
 * the plain world: a shape that is off draws nothing, so the plain world is the same with or
 * without the others.
 */
function applyShapes(w: ShapeInput, shapes: ReadonlySet<Shape> = new Set()): void {
  const streamOf = (shape: Shape) => {
    const rnd = seededRandom(`world:${w.seed}:${shape}`);
    return {
      chance: (p: number) => rnd() < p,
      int: (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1)),
      pick: <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T,
    };
  };
  // The wallets of ours a store's intent may be paid from: never its own merchant wallet (a wallet
  // paying itself moves nothing).
  const watchedPayers = (storeId: string): Hex[] => {
    const own = w.stores.find((s) => s.storeId === storeId);
    const all = w.stores.flatMap((s) => [s.merchant, s.custody]);
    return [...new Set(all)].filter((a) => a !== own?.merchant);
  };
  if (shapes.has('watched_payer')) {
    const r = streamOf('watched_payer');
    for (const intent of w.intents) if (r.chance(0.25)) intent.payer = r.pick(watchedPayers(intent.storeId));
  }
  if (shapes.has('watched_send_back')) {
    const r = streamOf('watched_send_back');
    for (const intent of w.intents)
      if (intent.outcome === 'send_back' && r.chance(0.6))
        intent.payer = r.pick(watchedPayers(intent.storeId));
  }
  if (shapes.has('claim_to_watched')) {
    const r = streamOf('claim_to_watched');
    for (const p of w.payouts) {
      if (!r.chance(0.35)) continue;
      const own = w.stores.find((s) => s.storeId === p.storeId);
      const others = w.stores.filter((s) => s.storeId !== p.storeId);
      // The same store's merchant wallet most often (a merchant paying itself out), else another store's.
      const choices = [own?.merchant, own?.merchant, ...others.flatMap((s) => [s.merchant, s.custody])];
      p.recipient = r.pick(choices.filter((a): a is Hex => a !== undefined));
    }
  }
  if (shapes.has('owner_moves')) {
    const r = streamOf('owner_moves');
    const wallets = [...new Set(w.stores.flatMap((s) => [s.merchant, s.custody]))];
    for (let i = r.int(0, 3); i > 0 && wallets.length > 1; i--) {
      const from = r.pick(wallets);
      const to = r.pick(wallets.filter((a) => a !== from));
      const token = r.pick(w.tokens);
      w.strays.push({
        kind: 'owner_move',
        at: r.int(0, w.span),
        token: token.address,
        from,
        to,
        value: BigInt(r.int(1, 500)) * 10n ** BigInt(token.decimals) + BigInt(r.int(0, 999)),
        txHash: w.txHash(`owner_move:${i}`),
      });
    }
  }
  if (shapes.has('refund_pieces')) {
    const r = streamOf('refund_pieces');
    w.payouts.forEach((p, n) => {
      if (p.end === 'claimed' || p.end === 'open' || !r.chance(0.6)) return;
      const count = p.A >= 3n ? r.int(1, 3) : 1;
      const oneTx = r.chance(0.4);
      const pieces: RefundPiece[] = [];
      let left = p.A;
      for (let k = 0; k < count; k++) {
        const last = k === count - 1;
        const value = last ? left : 1n + (left * BigInt(r.int(10, 60))) / 100n;
        left -= value;
        pieces.push({
          value,
          txHash: oneTx ? p.refundTx : w.txHash(`refund:${n}:${k}`),
          // Pieces of one transaction are mined together; separate ones may come hours apart.
          delayMs: oneTx || k === 0 ? 0 : r.chance(0.5) ? r.int(60_000, 3 * 3_600_000) : r.int(1_000, 60_000),
        });
      }
      const [lastPiece] = pieces.slice(-1);
      // A refund that never completes (the last piece never comes), or one that returns more
      // (an overpayment at funding, returned with the last piece).
      if (lastPiece && pieces.length > 1 && r.chance(0.2)) pieces.pop();
      else if (lastPiece && r.chance(0.15)) lastPiece.value += BigInt(r.int(1, 1_000));
      p.refundPieces = pieces;
    });
  }
  if (shapes.has('claimed_then_refunded')) {
    const r = streamOf('claimed_then_refunded');
    for (const p of w.payouts)
      if (p.end === 'claimed' && r.chance(0.5)) p.refundAfterClaimMs = r.int(60_000, 3 * 3_600_000);
  }
  if (shapes.has('stuck_intent')) {
    const r = streamOf('stuck_intent');
    for (const intent of w.intents) {
      if (!r.chance(0.12)) continue;
      // The last state the service reaches and never leaves: paid and waiting, under review, or
      // sending the payment back (the send-back transfer still goes out).
      const open = intent.timeline.findLastIndex(
        (s) =>
          s.status === CheckoutStatus.ON_CHAIN ||
          s.status === CheckoutStatus.MANUAL_OPERATION ||
          s.status === CheckoutStatus.SEND_BACK,
      );
      if (open < 0) continue;
      intent.timeline = intent.timeline.slice(0, open + 1);
      // Never confirmed: no sweep from the temporary wallet.
      intent.tx2 = null;
    }
  }
  // After stuck_intent, which may leave an intent unconfirmed.
  const confirmed = (i: SimIntent) => i.timeline[i.timeline.length - 1]?.status === CheckoutStatus.CONFIRMED;
  // Only the last webhook tells stablebooks that the service changed its mind after a terminal
  // status (it stops polling there): an intent the service contradicts keeps its webhooks.
  const terminals = (i: SimIntent) => i.timeline.filter((s) => isTerminalCheckoutStatus(s.status)).length;
  if (shapes.has('webhooks_lost')) {
    const r = streamOf('webhooks_lost');
    for (const intent of w.intents)
      if (r.chance(0.25) && intent.trackedAtCreation && confirmed(intent) && terminals(intent) === 1)
        intent.webhooksLost = true;
  }
}

/**
 * fee_mismatch (sim/shapes.ts), after the chain's shapes: rule 1 waits for the chain's proof of
 * the net, and once proven books it for good, so a payment a reorg shape takes away after it was
 * read would leave the books to when the indexer read it; those intents keep figures that add up.
 */
function feeMismatch(world: World, shapes: ReadonlySet<Shape>): void {
  if (!shapes.has('fee_mismatch')) return;
  const rnd = seededRandom(`world:${world.seed}:fee_mismatch`);
  const targets = new Set(world.reorgs.map((r) => r.target));
  for (const intent of world.intents) {
    const pick = rnd() < 0.2;
    const off = BigInt(1 + Math.floor(rnd() * 1_000));
    const down = rnd() < 0.5;
    if (!pick || intent.timeline[intent.timeline.length - 1]?.status !== CheckoutStatus.CONFIRMED) continue;
    if (targets.has(intent.tx1) || (intent.tx2 !== null && targets.has(intent.tx2))) continue;
    const N = intent.P - intent.F;
    intent.reportedNet = N > off && down ? N - off : N + off;
  }
}

/**
 * The shapes of what the service says (sim/shapes.ts): `fiat_priced`, `decimal_forms`,
 * `lookalike_intent`. Each draws from a stream of its own (`world:<shape>:<seed>`), after the
 * world is made, so a shape that is off draws nothing and changes nothing.
 */
function serviceShapes(
  seed: string,
  shapes: ReadonlySet<Shape>,
  world: { intents: SimIntent[]; payouts: SimPayout[]; lookalike: Hex },
): void {
  const stream = (shape: Shape) => seededRandom(`world:${shape}:${seed}`);
  if (shapes.has('fiat_priced')) {
    const rnd = stream('fiat_priced');
    for (const intent of world.intents) {
      if (rnd() >= 0.35) continue;
      const fx = FIAT[Math.floor(rnd() * FIAT.length)] as (typeof FIAT)[number];
      // The service's rate of the day, within 1% of the usual one, in millionths of a coin.
      const rateMicros = BigInt(Math.max(1, Math.round(fx.coinsPerUnit * 1e6 * (0.99 + rnd() * 0.02))));
      // R coins at that rate, in fiat cents: R * 100 / rate, within a JSON number's exact range.
      let cents = (intent.R * 100n * 1_000_000n) / (rateMicros * 10n ** BigInt(intent.token.decimals));
      if (cents < 1n) cents = 1n;
      if (cents > BigInt(Number.MAX_SAFE_INTEGER)) cents = BigInt(Number.MAX_SAFE_INTEGER);
      intent.fiat = {
        currency: fx.currency,
        symbol: fx.symbol,
        cents,
        rate: formatDecimalAmount(rateMicros, 6),
      };
    }
  }
  if (shapes.has('decimal_forms')) {
    const rnd = stream('decimal_forms');
    for (const intent of world.intents) if (rnd() < 0.5) intent.decimalForms = true;
    for (const payout of world.payouts) if (rnd() < 0.5) payout.decimalForms = true;
  }
  if (shapes.has('lookalike_intent')) {
    const rnd = stream('lookalike_intent');
    if (world.intents.length > 0 && rnd() < 0.4) {
      const intent = world.intents[Math.floor(rnd() * world.intents.length)] as SimIntent;
      // The copy keeps the real token's symbol and decimals; only its contract differs.
      intent.token = { ...intent.token, address: world.lookalike };
    }
  }
}

/**
 * Fiat currencies an intent is priced in (the service's Currency values), with about how many
 * coins one unit buys; 120 is one of the values above 73 that the spec says exist but does not list.
 */
const FIAT = [
  { currency: 1, symbol: '$', coinsPerUnit: 1 },
  { currency: 44, symbol: '€', coinsPerUnit: 1.08 },
  { currency: 48, symbol: '£', coinsPerUnit: 1.27 },
  { currency: 72, symbol: '¥', coinsPerUnit: 0.0067 },
  { currency: 29, symbol: 'CHF', coinsPerUnit: 1.13 },
  { currency: 120, symbol: null, coinsPerUnit: 0.25 },
] as const;

/**
 * An amount in base units at the edges a ledger must hold exactly: 1 base unit, above 2^53 and
 * 2^63 base units, full precision, and ordinary prices.
 */
function amount(rnd: () => number, decimals: number): bigint {
  const unit = 10n ** BigInt(decimals);
  const r = rnd();
  if (r < 0.05) return 1n;
  if (r < 0.12) return 2n ** 53n + BigInt(Math.floor(rnd() * 1e6));
  if (r < 0.18) return 2n ** 63n + BigInt(Math.floor(rnd() * 1e9));
  if (r < 0.35)
    return (
      BigInt(Math.floor(rnd() * 1e6)) * unit +
      BigInt(Math.floor(rnd() * Number(unit > 10n ** 15n ? 10n ** 15n : unit)))
    );
  return BigInt(1 + Math.floor(rnd() * 5_000)) * unit + (BigInt(Math.floor(rnd() * 100)) * unit) / 100n;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
