import { bigintMin } from '../src/money/bigintMin.ts';
import type { ReorgRecord } from './chainDouble.ts';
import { worldReplacements } from './chainShapes.ts';
import type { SimIntent, SimPayout, SimToken, World } from './world.ts';

/**
 * What the books must say, computed from the world's ground truth alone (what moved on the chain,
 * what the service decided, what reached stablebooks), with none of the posting code: the final
 * balance of every account, per store and token. The rules are written here again, on purpose,
 * from docs/accounting.md: an error in the posting code and the same error here would have to be
 * made twice.
 */
export interface GroundTruth {
  world: World;
  /** The transactions in the chain's final canonical blocks. */
  mined: ReadonlySet<string>;
  /** Intents stablebooks heard of: tracked at creation, or named by a delivered webhook. */
  known: ReadonlySet<string>;
  /** Payouts (by reference id) whose link stablebooks learnt from a create answer. */
  knownLinks: ReadonlySet<string>;
  /** A link's final status at the service (claimed, cancelled, expired, link_sent). */
  linkStatus: (referenceId: string) => string | undefined;
}

export type Balances = Map<string, bigint>;

const CONFIRMED = 20;

/**
 * The transfers the books must hold in suspense (rule 9), by transaction hash, and those they
 * must book out to owner transfers, as `out:<hash>`: the causes an open unmatched-transfer
 * finding may have. Filled by expectedBalances.
 */
export type SuspenseCauses = Set<string>;

export function expectedBalances(truth: GroundTruth, causes: SuspenseCauses = new Set()): Balances {
  const { world, mined, known } = truth;
  const merchantOf = (storeId: string) => world.stores.find((s) => s.storeId === storeId)?.merchant ?? '';
  const out: Balances = new Map();
  const add = (kind: string, storeId: string, token: SimToken, amount: bigint, tx?: string | null) => {
    if (kind === 'assets:suspense' && tx) causes.add(tx);
    if (amount === 0n) return;
    const code = `${kind}:${storeId}:${token.chainId}:${token.symbol}`;
    out.set(code, (out.get(code) ?? 0n) + amount);
  };
  // A watched wallet's store and account: a merchant wallet shared by stores belongs to the first
  // of them; a custody wallet is one store's.
  const walletOf = (address: string): { storeId: string; kind: string } | undefined => {
    const merchant = world.stores.find((s) => s.merchant === address);
    if (merchant) return { storeId: merchant.storeId, kind: 'assets:wallet' };
    const custody = world.stores.find((s) => s.custody === address);
    return custody ? { storeId: custody.storeId, kind: 'assets:custody' } : undefined;
  };
  // Rule 9 for one side of a transfer that touches a wallet of ours (a transfer between two of
  // them is two facts: each side is booked on its own, whatever explains the other).
  const unmatchedIn = (address: string, token: SimToken, value: bigint, tx: string) => {
    const w = walletOf(address);
    if (!w) return;
    add(w.kind, w.storeId, token, value);
    add('assets:suspense', w.storeId, token, -value, tx);
  };
  const unmatchedOut = (address: string, token: SimToken, value: bigint, tx: string) => {
    const w = walletOf(address);
    if (!w) return;
    causes.add(`out:${tx}`);
    add(w.kind, w.storeId, token, -value);
    add('equity:owner_transfers', w.storeId, token, value);
  };

  // Direct payments into one merchant wallet from one payer, same token and amount: nothing on the
  // chain tells their returns apart. When some were sent back and some kept, the books may clear
  // any of them with a return (paymentReturns.ts prefers an intent seen at SEND_BACK, else the
  // oldest): whichever arrivals stay in suspense, each is explained by the world.
  const lookAlikeArrivals = new Map<string, { returned: string[]; kept: string[] }>();
  for (const intent of world.intents) {
    // An intent in a contract outside the registry (a look-alike copying a real token's symbol):
    // no sale (rule 1 books only registry tokens, `unknown_token`), and nothing it moved on the
    // chain is money: the indexer never reads that contract.
    if (!inRegistry(world, intent)) continue;
    const final = finalStatus(intent);
    const sym = intent.token; // its symbol and chain name the accounts
    const s = intent.storeId;
    const N = intent.P - intent.F;
    const payingTx = intent.route === 'temp' ? intent.tx2 : intent.tx1;
    const paid = paymentMined(intent, mined);
    // A payer that is a wallet of ours: its outflow is its own fact (an owner transfer), whatever
    // the intent is; so is a payment sent back into it (suspense). A payment in pieces is a fact
    // per piece, each from its own payer.
    const pieces = intent.pieces ?? [];
    const firstPiece = intent.P - pieces.reduce((sum, piece) => sum + piece.value, 0n);
    if (mined.has(intent.tx1)) unmatchedOut(intent.payer, sym, firstPiece, intent.tx1);
    for (const piece of pieces)
      if (mined.has(piece.txHash)) unmatchedOut(piece.from, sym, piece.value, piece.txHash);
    if (intent.returnTx !== null && mined.has(intent.returnTx))
      unmatchedIn(intent.payer, sym, intent.P, intent.returnTx);
    if (final === CONFIRMED && known.has(intent.id) && (intent.reportedNet === undefined || paid)) {
      // Rule 1, then rule 2 once the paying transfer is final on chain. Reported figures that do
      // not add up (fee_mismatch) wait for the chain's net: booked only once the payment is final,
      // with the chain's P - F, which is the world's.
      add('income:sales', s, sym, -intent.R);
      add('expense:service_fees', s, sym, intent.F);
      if (intent.R > intent.P) add('expense:sales_shortfall', s, sym, intent.R - intent.P);
      if (intent.P > intent.R) add('liability:customer_overpayments', s, sym, -(intent.P - intent.R));
      add(paid ? 'assets:wallet' : 'assets:in_transit', s, sym, N);
      continue;
    }
    // Not a sale in our books: what reached the merchant wallet matched nothing (rule 9), unless
    // the service sent it back, which clears it.
    const intoMerchant = intent.route === 'direct' ? intent.P : N;
    // The sweep of a routed payment exists only once the service confirmed it, even if it later
    // cancelled: whatever reached the merchant wallet and is no sale is suspense.
    const arrived = paid;
    const returnMined = intent.returnTx !== null && mined.has(intent.returnTx);
    // Only an intent stablebooks knows tells it that a transfer out is that payment sent back.
    const returned = returnMined && known.has(intent.id);
    if (arrived && !returned) {
      add('assets:wallet', s, sym, intoMerchant);
      add('assets:suspense', s, sym, -intoMerchant, payingTx);
      if (intent.route === 'direct') for (const piece of pieces) causes.add(piece.txHash);
    }
    if (arrived && payingTx !== null && intent.route === 'direct') {
      const key = `${merchantOf(s)}|${intent.payer}|${sym.address}|${intoMerchant}`;
      const twins = lookAlikeArrivals.get(key) ?? { returned: [], kept: [] };
      (returned ? twins.returned : twins.kept).push(payingTx);
      lookAlikeArrivals.set(key, twins);
    }
    if (returnMined && !returned) unmatchedOut(merchantOf(s), sym, intent.P, intent.returnTx as string);
  }

  for (const { returned, kept } of lookAlikeArrivals.values())
    if (returned.length > 0 && kept.length > 0) for (const tx of returned) causes.add(tx);

  // Claim links: rule 5 (the API's answer, then the funding's fee on chain), rule 6 (claimed),
  // rules 7 and 8 (cancelled or expired, and refunded): custody ends -(A + F), or -F when the
  // principal came back.
  for (const p of world.payouts) {
    const status = truth.linkStatus(p.referenceId);
    if (!status || !truth.knownLinks.has(p.referenceId) || !fundingMined(p, mined)) continue;
    const sym = p.token; // its symbol and chain name the accounts
    // Rule 5: every part of the funding is the link's; what they exceed A by is its fee.
    const funded = fundedTotal(p, mined);
    add('assets:claim_pool', p.storeId, sym, p.A);
    add('assets:custody', p.storeId, sym, -funded);
    add('expense:payout_fees', p.storeId, sym, funded - p.A);
    const refunded = refundPieces(p).filter((r) => mined.has(r.txHash));
    const S = refunded.reduce((sum, r) => sum + r.value, 0n);
    if (status === 'claimed' && mined.has(p.claimTx)) {
      add('assets:claim_pool', p.storeId, sym, -p.A);
      add('expense:payouts', p.storeId, sym, p.A);
      // A refund of a claimed link (the service contradicting itself) is owed nothing: suspense.
      for (const r of refunded) {
        add('assets:custody', p.storeId, sym, r.value);
        add('assets:suspense', p.storeId, sym, -r.value, r.txHash);
      }
    }
    if ((status === 'cancelled' || status === 'expired') && S > 0n) {
      // Rule 7 moves A to the receivable; rule 8 clears it piece by piece, never below zero: what
      // never came stays owed, an excess is a funding overpayment returned out of payout_fees.
      const cleared = bigintMin(S, p.A);
      add('assets:claim_pool', p.storeId, sym, -p.A);
      add('assets:refund_receivable', p.storeId, sym, p.A - cleared);
      add('assets:custody', p.storeId, sym, S);
      add('expense:payout_fees', p.storeId, sym, -(S - cleared));
    }
  }
  // A claim into a wallet of ours: the claim is the pool's (above), the arrival is the wallet's.
  for (const p of world.payouts) if (mined.has(p.claimTx)) unmatchedIn(p.recipient, p.token, p.A, p.claimTx);
  // The owner's deposits into custody explain nothing: suspense (rule 9).
  for (const d of world.deposits) {
    if (!mined.has(d.txHash)) continue;
    add('assets:custody', d.storeId, d.token, d.value);
    add('assets:suspense', d.storeId, d.token, -d.value, d.txHash);
  }

  // A reorg's replacement transaction (reorg_replace) is a transfer no intent names: a stray.
  for (const stray of [...world.strays, ...worldReplacements(world)]) {
    if (!mined.has(stray.txHash)) continue;
    const token = world.tokens.find((t) => t.address === stray.token);
    if (!token) continue; // a look-alike contract is never money
    unmatchedIn(stray.to, token, stray.value, stray.txHash);
    unmatchedOut(stray.from, token, stray.value, stray.txHash);
  }
  return out;
}

/** What custody sent the link's pool, of the funding's transfers mined (funding_pieces: several). */
export function fundedTotal(p: SimPayout, mined: ReadonlySet<string>): bigint {
  const pieces = p.fundingPieces ?? [];
  const rest = p.fundingKind === 'split' ? pieces.reduce((sum, f) => sum + f.value, 0n) : 0n;
  const first = mined.has(p.fundingTx) ? p.A + p.F - rest : 0n;
  const resent = p.fundingResend && mined.has(p.fundingResend.txHash) ? p.A + p.F : 0n;
  return pieces.reduce((sum, f) => sum + (mined.has(f.txHash) ? f.value : 0n), first + resent);
}

/** Whether any transfer of the link's funding is on chain (the first, or its resend). */
export function fundingMined(p: SimPayout, mined: ReadonlySet<string>): boolean {
  return mined.has(p.fundingTx) || (p.fundingResend !== undefined && mined.has(p.fundingResend.txHash));
}

/**
 * Whether the intent's payment is on chain: the transfer into the merchant wallet (the sweep when
 * routed), and when paid directly in pieces (payment_pieces), every piece.
 */
export function paymentMined(intent: SimIntent, mined: ReadonlySet<string>): boolean {
  if (intent.route === 'temp') return intent.tx2 !== null && mined.has(intent.tx2);
  return mined.has(intent.tx1) && (intent.pieces ?? []).every((piece) => mined.has(piece.txHash));
}

/** The link's refund as the service pays it: the world's pieces, or one transfer of A. */
export function refundPieces(p: SimPayout): Array<{ value: bigint; txHash: string }> {
  return p.refundPieces ?? [{ value: p.A, txHash: p.refundTx }];
}

/** Whether the intent's token is one of the registry's (the world's tokens), not a look-alike. */
export function inRegistry(world: World, intent: SimIntent): boolean {
  return world.tokens.some((t) => t.address === intent.token.address);
}

/**
 * Whether rule 1 books the intent (net of reversals): confirmed in the end, known, in a registry
 * token, and, when its reported figures do not add up (fee_mismatch), its payment final on chain.
 */
export function booksSale(
  world: World,
  intent: SimIntent,
  known: ReadonlySet<string>,
  mined: ReadonlySet<string>,
): boolean {
  return (
    finalStatus(intent) === CONFIRMED &&
    known.has(intent.id) &&
    inRegistry(world, intent) &&
    (intent.reportedNet === undefined || paymentMined(intent, mined))
  );
}

export function finalStatus(intent: SimIntent): number {
  return intent.timeline[intent.timeline.length - 1]?.status ?? 1;
}

/**
 * A reorg as the harness saw it: what the chain double replaced, and how far the indexer had been
 * shown finality before it (the head of its passes minus the finality depth): `finalSure` over the
 * passes that ran to the head without a crash (every row up to it was final), `finalMaybe` over
 * every pass begun (a crashed one may have marked rows final, or not).
 */
export interface ReorgFact {
  chainId: number;
  record: ReorgRecord;
  finalSure: bigint;
  finalMaybe: bigint;
}

/**
 * Which chains must have an open reorg_beyond_finality finding (`must`), which may (`may`), and,
 * absent from the map, which must not. A reorg orphaned a final block when it replaced a block at
 * or below the finality the indexer had been shown, holding a transfer of an accepted token into
 * or out of a store's merchant or custody wallet (a row the indexer stored and made final): must.
 * The same with only a crashed pass's finality, or with only transfers of a claim link's pool
 * (watched once the settlement learnt it): may.
 */
export function beyondFinality(world: World, facts: readonly ReorgFact[]): Map<number, 'must' | 'may'> {
  const out = new Map<number, 'must' | 'may'>();
  const wallets = new Set(world.stores.flatMap((s) => [s.merchant, s.custody]));
  for (const fact of facts) {
    const accepted = new Set(world.tokens.filter((t) => t.chainId === fact.chainId).map((t) => t.address));
    for (const block of fact.record.replaced) {
      const money = block.transfers.filter((t) => accepted.has(t.token));
      if (money.length === 0 || block.number > fact.finalMaybe) continue;
      const watched = money.some((t) => wallets.has(t.from) || wallets.has(t.to));
      if (watched && block.number <= fact.finalSure) out.set(fact.chainId, 'must');
      else if (out.get(fact.chainId) !== 'must') out.set(fact.chainId, 'may');
    }
  }
  return out;
}
