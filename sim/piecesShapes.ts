import { createHash } from 'node:crypto';
import type { Hex } from 'viem';
import { seededRandom } from '../src/seededRandom.ts';
import { CheckoutStatus } from '../src/svc/models/checkoutStatus.ts';
import type { Shape } from './shapes.ts';
import type { PaymentPiece, SimIntent, World } from './world.ts';

/**
 * The shapes of money in pieces and bundles (sim/shapes.ts; docs/accounting.md, "Pieces and
 * bundles"): a payment in two or three transfers, one transfer paying two intents, a funding in
 * two parts or sent twice, a cancel answered with success after the claim, a confirmed payment
 * cancelled and sent back. Each draws from a random stream of its own (`world:<seed>:<shape>`),
 * after the plain world and before the chain's shapes (whose reorgs keep away from them), so a
 * shape that is off draws nothing and changes nothing.
 */
export function piecesShapes(world: World, shapes: ReadonlySet<Shape>): void {
  const streamOf = (shape: Shape) => {
    const rnd = seededRandom(`world:${world.seed}:${shape}`);
    return {
      chance: (p: number) => rnd() < p,
      int: (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1)),
      pick: <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T,
    };
  };
  const label = (what: string) => hashOf(`${world.seed}:${what}`);
  if (shapes.has('payment_pieces')) paymentPieces(world, streamOf('payment_pieces'), label);
  if (shapes.has('bundle_payment')) bundlePayment(world, streamOf('bundle_payment'));
  if (shapes.has('cancelled_return')) cancelledReturn(world, streamOf('cancelled_return'), label);
  if (shapes.has('funding_pieces')) fundingPieces(world, streamOf('funding_pieces'), label);
  if (shapes.has('cancel_races_claim')) {
    const r = streamOf('cancel_races_claim');
    for (const p of world.payouts)
      if (p.end === 'cancel_after_claim' && r.chance(0.6)) p.cancelRacesClaim = true;
  }
}

type Stream = {
  chance: (p: number) => boolean;
  int: (lo: number, hi: number) => number;
  pick: <T>(xs: readonly T[]) => T;
};

const at = (intent: SimIntent, status: number) => intent.timeline.find((s) => s.status === status)?.at;
const endsConfirmed = (intent: SimIntent) =>
  intent.timeline[intent.timeline.length - 1]?.status === CheckoutStatus.CONFIRMED;
/** An intent no pieces shape has taken yet. */
const plain = (intent: SimIntent) =>
  !intent.pieces && !intent.bundledInto && intent.returnAfterCancelMs === undefined;

/**
 * payment_pieces: a confirmed intent's payment in 2 or 3 transfers; some come after the
 * confirmation (within 5 minutes), some from another payer; the service names any one of them
 * as tx_hash when paid directly (only intents tracked at their creation: see below). Routed, the
 * pieces go to the temporary wallet before the sweep.
 */
function paymentPieces(world: World, r: Stream, label: (what: string) => string): void {
  for (const intent of world.intents) {
    const paidAt = at(intent, CheckoutStatus.ON_CHAIN);
    const confirmedAt = at(intent, CheckoutStatus.CONFIRMED);
    if (!endsConfirmed(intent) || paidAt === undefined || confirmedAt === undefined) continue;
    // Paid directly, the pieces are top-ups, taken only within the intent's window, which opens at
    // its first tracking less 5 minutes (docs/accounting.md, rule 2): an intent first heard of by a
    // later webhook may have been paid before it. The service gives no creation time, so only an
    // intent tracked at its creation is paid in pieces here.
    if (intent.route === 'direct' && !intent.trackedAtCreation) continue;
    if (intent.outcome === 'send_back' || intent.P < 3n || !r.chance(0.3)) continue;
    const extra = r.int(1, 2);
    const pieces: PaymentPiece[] = [];
    let left = intent.P;
    for (let k = 0; k < extra; k++) {
      const value = 1n + (left * BigInt(r.int(10, 45))) / 100n;
      left -= value;
      const gap = Math.max(1_000, confirmedAt - paidAt - 1);
      const late = intent.route === 'direct' && r.chance(0.3);
      pieces.push({
        value,
        txHash: `0x${label(`tx:piece:${intent.id}:${k}`)}` as Hex,
        from: r.chance(0.3)
          ? (`0x${label(`piece_payer:${intent.id}:${k}`).slice(0, 40)}` as Hex)
          : intent.payer,
        delayMs: late ? confirmedAt - paidAt + r.int(1_000, 5 * 60_000) : r.int(1_000, gap),
      });
    }
    intent.pieces = pieces;
    if (intent.route === 'direct' && r.chance(0.5)) intent.namedTx = r.pick(pieces).txHash;
  }
}

/**
 * bundle_payment: two direct intents of one store and token, both confirmed, paid by one
 * transfer of both amounts that the service names for each.
 */
function bundlePayment(world: World, r: Stream): void {
  const fit = world.intents.filter((i) => i.route === 'direct' && endsConfirmed(i) && plain(i));
  for (const a of fit) {
    if (a.bundledInto || world.intents.some((x) => x.bundledInto === a.id)) continue;
    const b = fit.find(
      (x) =>
        x !== a &&
        !x.bundledInto &&
        x.storeId === a.storeId &&
        x.token.address === a.token.address &&
        !world.intents.some((y) => y.bundledInto === x.id),
    );
    if (!b || !r.chance(0.5)) continue;
    b.bundledInto = a.id;
    b.tx1 = a.tx1;
    b.payer = a.payer;
    b.createdAt = Math.min(a.createdAt, b.createdAt);
    b.timeline = a.timeline.map((s) => ({ ...s }));
  }
}

/**
 * cancelled_return: a direct payment confirmed (and so proven), then CANCELED by the service,
 * which sends it back to its payer from the merchant wallet.
 */
function cancelledReturn(world: World, r: Stream, label: (what: string) => string): void {
  for (const intent of world.intents) {
    if (intent.route !== 'direct' || !endsConfirmed(intent) || !plain(intent) || intent.returnTx) continue;
    if (world.intents.some((x) => x.bundledInto === intent.id) || !r.chance(0.25)) continue;
    // A cancel after CONFIRMED reaches stablebooks only by its webhook (it stops polling at a
    // terminal status): webhooks_lost keeps away from intents the service contradicts, and so
    // does this (checked after the draw, so the other intents draw as before).
    if (intent.webhooksLost) continue;
    const last = intent.timeline[intent.timeline.length - 1];
    if (!last) continue;
    intent.timeline.push({ at: last.at + r.int(60_000, 2 * 3_600_000), status: CheckoutStatus.CANCELED });
    intent.returnTx = `0x${label(`tx:return_cancel:${intent.id}`)}` as Hex;
    intent.returnAfterCancelMs = r.int(10_000, 30 * 60_000);
  }
}

/**
 * funding_pieces: a link funded in two parts (the create answer names the first), or funded a
 * second time in full; a doubly funded link ends cancelled or expired, refunded whole (both
 * principals and the second fee), so its pool ends empty.
 */
function fundingPieces(world: World, r: Stream, label: (what: string) => string): void {
  world.payouts.forEach((p, n) => {
    // Matched by amount, a first part below A would fund nothing: near-equal payouts and lost
    // answers keep one funding (docs/decisions.md, "Payments by allocation": shapes not produced).
    if (p.createReachesService || p.lostAnswer || p.A + p.F < 3n || !r.chance(0.35)) return;
    const double = (p.end === 'cancelled' || p.end === 'expired') && r.chance(0.4);
    const txHash = `0x${label(`tx:funding_piece:${n}`)}` as Hex;
    const delayMs = r.int(5_000, 10 * 60_000);
    if (double) {
      p.fundingKind = 'double';
      p.fundingPieces = [{ value: p.A + p.F, txHash, delayMs }];
      p.refundPieces = [{ value: 2n * p.A + p.F, txHash: p.refundTx, delayMs: 0 }];
      return;
    }
    p.fundingKind = 'split';
    p.fundingPieces = [{ value: 1n + ((p.A + p.F) * BigInt(r.int(10, 60))) / 100n, txHash, delayMs }];
  });
}

/**
 * funding_resent: a reorg drops a link's funding once the link is sent (the funding read but not
 * final, or final and booked: then beyond finality), and the service, its funding gone, sends the
 * whole funding again under a new hash a few minutes later. Only links whose claim, cancel or
 * expiry comes at least 90 minutes after their creation, so the funding is back by then; not
 * links matched by amount. Drawn after the chain's shapes (the reorg names the payout's chain).
 */
export function fundingResent(world: World, shapes: ReadonlySet<Shape>): void {
  if (!shapes.has('funding_resent')) return;
  const rnd = seededRandom(`world:${world.seed}:funding_resent`);
  const taken = new Set(world.reorgs.map((r) => r.target));
  world.payouts.forEach((p, n) => {
    const roomy = p.end === 'expired' || p.end === 'open' || p.endAt - p.createdAt >= 90 * 60_000;
    const draw = rnd();
    const late = rnd() < 0.5;
    const delayMs = 60_000 + Math.floor(rnd() * 4 * 60_000);
    if (draw >= 0.3 || !roomy || p.fundingPieces || p.lostAnswer || p.createReachesService) return;
    if (taken.has(p.fundingTx)) return;
    p.fundingResend = { txHash: `0x${hashOf(`${world.seed}:tx:funding_resent:${n}`)}` as Hex, delayMs };
    world.reorgs.push({
      shape: 'funding_resent',
      chainId: p.token.chainId,
      target: p.fundingTx,
      change: 'drop',
      when: late ? 'after_final' : 'after_index',
      depth: 1,
    });
  });
}

function hashOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
