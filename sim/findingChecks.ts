import { sql } from 'drizzle-orm';
import type { Db } from '../src/db/database.ts';
import { CheckoutStatus, isTerminalCheckoutStatus } from '../src/svc/models/checkoutStatus.ts';
import type { SimReorgPlan } from './chainShapes.ts';
import {
  beyondFinality,
  finalStatus,
  fundingMined,
  inRegistry,
  type ReorgFact,
  refundPieces,
  type SuspenseCauses,
} from './oracle.ts';
import { type SimEvent, worldTransfers } from './schedule.ts';
import { SIM_CHAIN_ID, type SimIntent, type SimPayout, storePar, type World } from './world.ts';

/**
 * The findings the books must hold once the world is quiet and a reconciliation run has been
 * over it, from the world's ground truth alone (docs/accounting.md, "Findings"):
 * - each finding the world planted is open, for its ref (`mustBeOpen`): a missing webhook, an
 *   underpaid or overpaid sale, reported figures that do not add up, a refund overdue, a booked
 *   transfer a reorg took away, an intent the service never decides, a stranger's transfer;
 * - every open finding, of any kind, has a cause the oracle names from the world (`causes`):
 *   an open finding without one is a problem, and so is a kind the oracle does not know.
 * The product's conclusions are never the truth here: a finding's ref and details only say which
 * world fact to look up.
 */
export interface FindingFacts {
  world: World;
  /** The events the world was played with (what the service sent, which calls it failed). */
  events: readonly SimEvent[];
  known: ReadonlySet<string>;
  knownLinks: ReadonlySet<string>;
  /** The transactions in the chains' final canonical blocks. */
  mined: ReadonlySet<string>;
  linkStatus: (referenceId: string) => string | undefined;
  reorgFacts: readonly ReorgFact[];
  /** What expectedBalances booked by rule 9: suspense by hash, owner transfers as `out:<hash>`. */
  causes: SuspenseCauses;
  /** The chain doubles' balanceOf at a block (below zero where the world overdrew a wallet). */
  balanceAt: (chainId: number, token: string, wallet: string, block: bigint) => bigint;
  /** How long a final transfer may wait for the fact that explains it (runWorld's GRACE_MS). */
  graceMs: number;
  /** Whether the service's webhook of the intent sent at `sentAt` has a body (a paid state). */
  webhookAt: (intent: SimIntent, sentAt: number, id: string) => unknown;
}

type OpenFinding = {
  kind: string;
  ref_type: string;
  ref_id: string;
  details: Record<string, unknown>;
};

const CONFIRMED = CheckoutStatus.CONFIRMED;

export async function judgeFindings(db: Db, facts: FindingFacts): Promise<string[]> {
  const problems: string[] = [];
  const { rows } = await db.execute<OpenFinding>(sql`
    select kind, ref_type, ref_id, details from findings where resolved_at is null order by id`);
  const open = new Set(rows.map((f) => `${f.kind}|${f.ref_type}|${f.ref_id.toLowerCase()}`));
  const causeOf = causes(facts);
  for (const f of rows) {
    const cause = causeOf(f);
    if (cause === undefined)
      problems.push(
        `finding ${f.kind} on ${f.ref_type} ${shortRef(f.ref_id)} is open and the world has no cause for it`,
      );
  }
  for (const want of mustBeOpen(facts)) {
    const found = want.kinds.some((k) =>
      want.refs.some((ref) => open.has(`${k}|${want.refType}|${ref.toLowerCase()}`)),
    );
    if (!found) problems.push(`${want.why}: no open ${want.kinds.join(' or ')} finding`);
  }
  return problems;
}

/** A finding the world planted: one of `kinds` must be open on one of `refs`. */
interface Expected {
  kinds: string[];
  refType: string;
  refs: string[];
  why: string;
}

function mustBeOpen(facts: FindingFacts): Expected[] {
  const { world, known, mined } = facts;
  const out: Expected[] = [];
  const webhooked = webhookedIntents(facts);
  for (const intent of world.intents) {
    if (!known.has(intent.id)) continue;
    const intentRef = (kinds: string[], why: string) =>
      out.push({ kinds, refType: 'checkout_intent', refs: [intent.id], why: `intent ${intent.id}: ${why}` });
    if (!isTerminalCheckoutStatus(finalStatus(intent) as CheckoutStatus))
      intentRef(['stuck_intent'], `the service left it at status ${finalStatus(intent)}`);
    if (finalStatus(intent) !== CONFIRMED || !inRegistry(world, intent)) continue;
    if (intent.P < intent.R) intentRef(['underpaid'], 'confirmed with P < R');
    if (intent.P > intent.R) intentRef(['overpaid'], 'confirmed with P > R');
    if (intent.reportedNet !== undefined)
      intentRef(['fee_arithmetic_mismatch'], 'the service reported P - F != N');
    if (!webhooked.has(intent.id)) intentRef(['missing_webhook'], 'confirmed, and no checkout webhook came');
  }
  // A stranger's transfer the chain kept (a look-alike contract's is never read).
  for (const stray of world.strays) {
    if (stray.kind !== 'stranger_in' || !mined.has(stray.txHash)) continue;
    if (!world.tokens.some((t) => t.address === stray.token)) continue;
    out.push({
      kinds: ['unmatched_transfer_in'],
      refType: 'chain_transfer',
      refs: transferRefs(facts, stray.txHash),
      why: `stranger's transfer ${stray.txHash.slice(0, 10)}`,
    });
  }
  for (const p of world.payouts) {
    if (!refundShort(facts, p)) continue;
    out.push({
      kinds: ['refund_overdue', 'expiry_refund_overdue'],
      refType: 'claim_link',
      refs: [p.linkId],
      why: `payout ${p.referenceId}: ${facts.linkStatus(p.referenceId)}, its refund came short of A`,
    });
  }
  // A transfer into or out of a watched wallet that a reorg shape took away after the world had
  // it settled (bookedBefore): rule 3 reversed its booking and must say so.
  const watched = new Set(world.stores.flatMap((s) => [s.merchant, s.custody]));
  for (const plan of world.reorgs) {
    if (plan.when !== 'after_final' || !bookedBefore(facts, plan)) continue;
    const hit = facts.reorgFacts.some(
      (f) =>
        f.chainId === plan.chainId &&
        f.record.replaced.some(
          (b) =>
            b.number <= f.finalSure &&
            b.transfers.some(
              (t) =>
                t.txHash === plan.target &&
                (watched.has(t.from) || watched.has(t.to)) &&
                world.tokens.some((k) => k.address === t.token),
            ),
        ),
    );
    if (hit)
      out.push({
        kinds: ['reorged_transfer'],
        refType: 'chain_transfer',
        refs: transferRefs(facts, plan.target, plan.chainId),
        why: `${plan.shape} took booked transfer ${plan.target.slice(0, 10)} out of the chain`,
      });
  }
  return out;
}

/**
 * Whether the events booked the plan's target before its reorg, whatever the indexer's timing: it
 * was sent, mined, made final by two more blocks, marked final by the next index pass that did not
 * crash, and then two such passes ran more than the grace after that one (an unexplained transfer
 * waits that long for its fact), with no other reorg or dropped log on its chain in between.
 */
function bookedBefore(facts: FindingFacts, plan: SimReorgPlan): boolean {
  const transfers = worldTransfers(facts.world);
  const onChain = (chain: number | undefined) => (chain ?? SIM_CHAIN_ID) === plan.chainId;
  let sent = false;
  let mines = 0;
  let finalAt: number | undefined;
  let markedAt: number | undefined;
  let passes = 0;
  for (const e of facts.events) {
    if (e.k === 'reorg' && e.change?.target === plan.target && onChain(e.chain)) return passes >= 2;
    if (!sent) {
      sent = e.k === 'send' && transfers.get(e.tx)?.txHash === plan.target;
      continue;
    }
    if ((e.k === 'reorg' || e.k === 'dropLog') && onChain(e.chain)) return false;
    if (e.k === 'mine' && ++mines === 3) finalAt = e.t;
    if (e.k !== 'index' || e.crash !== undefined || finalAt === undefined) continue;
    // The first pass after the block is final marks it final (final_at): the grace runs from there.
    markedAt ??= e.t;
    if (e.t > markedAt + facts.graceMs) passes++;
  }
  return false;
}

/**
 * The link's claim could not be final and read before an expiry job ran: fewer than three blocks
 * (its own and the finality depth's two), or no index pass after them, came between the claim and
 * the first `expire` event (the world's blocks and passes stop with its span; the next come at
 * quiescence). On chain the claim then comes after our books expired the link.
 */
function claimedAfterLastBlock(events: readonly SimEvent[], ref: string): boolean {
  const claim = events.findIndex((e) => e.k === 'claim' && e.ref === ref);
  if (claim < 0) return false;
  let mines = 0;
  for (const e of events.slice(claim + 1)) {
    if (e.k === 'mine') mines++;
    if (e.k === 'index' && mines >= 3) return false;
    if (e.k === 'expire') return true;
  }
  return false;
}

/**
 * The ref of a transfer's finding is `<chain>:<tx>:<log index>`: the log indexes a transaction of
 * the world may have had (a block holds a few dozen transfers at most).
 */
function transferRefs(facts: FindingFacts, txHash: string, chainId?: number): string[] {
  const chains = chainId === undefined ? [...new Set(facts.world.tokens.map((t) => t.chainId))] : [chainId];
  return chains.flatMap((c) => Array.from({ length: 64 }, (_, i) => `${c}:${txHash}:${i}`));
}

/** The intents the service delivered a checkout webhook of (a paid state's: others have no body). */
function webhookedIntents(facts: FindingFacts): Set<string> {
  const byId = new Map(facts.world.intents.map((i) => [i.id, i]));
  const out = new Set<string>();
  for (const e of facts.events) {
    if (e.k !== 'webhook') continue;
    const intent = byId.get(e.intent);
    if (intent && facts.webhookAt(intent, e.sentAt, e.id) !== null) out.add(intent.id);
  }
  return out;
}

/**
 * A link the service closed whose refund came short of A (refund_pieces: the last piece never
 * comes) and that no claim emptied, of a payout stablebooks created and funded: its refund is
 * overdue. At least one piece reached custody, so the books know the link was closed.
 */
function refundShort(facts: FindingFacts, p: SimPayout): boolean {
  const status = facts.linkStatus(p.referenceId);
  if (status !== 'cancelled' && status !== 'expired') return false;
  if (!facts.knownLinks.has(p.referenceId) || !fundingMined(p, facts.mined) || facts.mined.has(p.claimTx))
    return false;
  const S = refundPieces(p)
    .filter((r) => facts.mined.has(r.txHash))
    .reduce((sum, r) => sum + r.value, 0n);
  return S > 0n && S < p.A;
}

/** Each kind's cause in the world, as a sentence; undefined when the world has none. */
function causes(facts: FindingFacts): (f: OpenFinding) => string | undefined {
  const { world, known, mined, events } = facts;
  const intents = new Map(world.intents.map((i) => [i.id, i]));
  const byLink = new Map(world.payouts.map((p) => [p.linkId, p]));
  const webhooked = webhookedIntents(facts);
  const has = (set: ReadonlySet<string>, tx: string | undefined) =>
    tx !== undefined && [...set].some((c) => c.toLowerCase() === tx);
  const replaced = (tx: string | undefined) =>
    tx !== undefined &&
    facts.reorgFacts.some((f) => f.record.replaced.some((b) => b.transfers.some((t) => t.txHash === tx)));
  const loud = beyondFinality(world, facts.reorgFacts);
  const eventsOf = (ref: string) =>
    events.filter((e) => (e.k === 'payout' || e.k === 'cancel') && e.ref === ref) as Array<
      SimEvent & { svc?: unknown[]; crash?: number }
    >;
  // The create answer that carries the funding hash is the first: lost, or its job died with it.
  const answerLost = (p: SimPayout) =>
    p.lostAnswer ||
    eventsOf(p.referenceId).some(
      (e) => e.k === 'payout' && (e.svc?.includes('lost') || e.crash !== undefined),
    );
  const contradicted = (i: SimIntent, from: (s: number) => boolean, to: (s: number) => boolean) =>
    i.timeline.some((a, n) => from(a.status) && i.timeline.slice(n + 1).some((b) => to(b.status)));
  const failure = (s: number) => s < 0;
  const confirmed = (s: number) => s === CONFIRMED;

  return (f) => {
    const tx = /0x[0-9a-f]{64}/i.exec(f.ref_id)?.[0]?.toLowerCase();
    const intent = intents.get(f.ref_id);
    const sale = intent !== undefined && known.has(intent.id) && finalStatus(intent) === CONFIRMED;
    const link = byLink.get(f.ref_id);
    switch (f.kind) {
      case 'unmatched_transfer_in':
        return has(facts.causes, tx) ? 'a transfer the oracle holds in suspense' : undefined;
      case 'unmatched_transfer_out':
        if (has(facts.causes, tx && `out:${tx}`)) return 'a transfer out the oracle books to owner transfers';
        return replaced(tx) ? 'a transfer out a reorg took away (acknowledge)' : undefined;
      case 'reorged_transfer':
        return replaced(tx) ? 'its block was replaced by a reorg' : undefined;
      case 'reorg_beyond_finality':
        return loud.has(Number(f.ref_id.split(':')[0])) ? 'a reorg replaced a block shown final' : undefined;
      case 'balance_proof_failed': {
        const [chainId, token, wallet] = f.ref_id.split(':');
        const block = f.details.block_number;
        if (!chainId || !token || !wallet || typeof block !== 'string') return undefined;
        return facts.balanceAt(Number(chainId), token, wallet, BigInt(block)) < 0n
          ? 'the world overdrew the wallet: no chain can answer its balance'
          : undefined;
      }
      case 'underpaid':
        return sale && inRegistry(world, intent) && intent.P < intent.R ? 'confirmed with P < R' : undefined;
      case 'overpaid':
        return sale && inRegistry(world, intent) && intent.P > intent.R ? 'confirmed with P > R' : undefined;
      case 'fee_arithmetic_mismatch':
        return sale && inRegistry(world, intent) && intent.reportedNet !== undefined
          ? 'the service reported P - F != N'
          : undefined;
      case 'missing_webhook':
        if (f.ref_type === 'claim_link')
          // The service sends a cancelled link's webhook once its refund is whole (serviceDouble.ts).
          return link &&
            facts.linkStatus(link.referenceId) === 'cancelled' &&
            refundPieces(link).reduce((sum, r) => sum + r.value, 0n) < link.A
            ? 'a cancelled link whose refund never became whole: the service sent no webhook'
            : undefined;
        return sale && !webhooked.has(intent.id) ? 'no checkout webhook of it was ever sent' : undefined;
      case 'payment_tx_not_found': {
        // verifyPayments reads the paying hash's receipt of an intent confirmed then (it may have
        // been cancelled since): none while the payment is off the chain.
        if (!intent || !inRegistry(world, intent) || !intent.timeline.some((s) => confirmed(s.status)))
          return undefined;
        const paying = intent.route === 'temp' ? intent.tx2 : intent.tx1;
        return paying === null || !mined.has(paying) ? 'its payment is not on the final chain' : undefined;
      }
      case 'webhook_without_chain_proof': {
        if (!sale || !inRegistry(world, intent)) return undefined;
        const paying = intent.route === 'temp' ? intent.tx2 : intent.tx1;
        return paying === null || !mined.has(paying) ? 'its payment is not on the final chain' : undefined;
      }
      case 'webhook_api_mismatch':
        return intent && staleWebhook(intent, f.details)
          ? 'a webhook of a state the intent then left'
          : undefined;
      case 'valuation_rate_missing': {
        // The world imports no rates: a store without par (storePar) has none for any day.
        const [storeId, , symbol, currency] = f.ref_id.split(':');
        return storeId !== undefined && currency === 'USD' && !storePar(world, storeId).has(symbol ?? '')
          ? 'a store without par, and the world imports no rates'
          : undefined;
      }
      case 'stuck_intent':
        return intent && !isTerminalCheckoutStatus(finalStatus(intent) as CheckoutStatus)
          ? 'the service never decided it'
          : undefined;
      case 'confirmed_then_failed':
      case 'proven_then_failed':
        return intent && contradicted(intent, confirmed, failure)
          ? 'the service cancelled a confirmed intent'
          : undefined;
      case 'terminal_status_changed':
        return intent && contradicted(intent, failure, confirmed)
          ? 'the service confirmed a cancelled intent'
          : undefined;
      case 'unknown_token':
        if (f.ref_type === 'chain_transfer')
          // verifyPayments stores every transfer of a receipt it reads: a look-alike intent's payment.
          return world.intents.some((i) => !inRegistry(world, i) && (i.tx1 === tx || i.tx2 === tx))
            ? "a look-alike intent's payment, read from its receipt"
            : undefined;
        return intent && !inRegistry(world, intent) ? 'an intent in a look-alike contract' : undefined;
      case 'intent_poll_refused':
        // A poll reading a replica from before the intent existed: "not found" (50001). Once the
        // intent is decided, the poll sweeper resolves it: open then, it has no cause.
        return intent &&
          !isTerminalCheckoutStatus(finalStatus(intent) as CheckoutStatus) &&
          events.some((e) => e.k === 'poll' && e.intent === intent.id && e.t - e.lag < intent.createdAt)
          ? 'a lagging read from before the intent existed'
          : undefined;
      case 'funding_matched_by_amount':
        if (link?.fundingResend)
          return 'a reorg took its funding and the service sent it again under a new hash';
        return link && answerLost(link) ? 'the first create answer never reached the books' : undefined;
      case 'claimed_after_cancel':
      case 'cancel_races_pool_outflow':
      case 'claim_link_close_conflict':
        return link?.cancelRacesClaim
          ? 'the service accepted a cancel with the claim already on chain'
          : undefined;
      case 'claim_link_closed_on_replay':
        // Run again because its answer was lost, after the recipient claimed (or it expired).
        return link &&
          answerLost(link) &&
          ['claimed', 'expired'].includes(facts.linkStatus(link.referenceId) ?? '')
          ? 'a create run again after its lost answer, once the link was closed'
          : undefined;
      case 'refund_overdue':
      case 'expiry_refund_overdue':
        return link && refundShort(facts, link) ? 'its refund came short of A' : undefined;
      case 'claim_link_refund_unexpected':
        return link?.refundAfterClaimMs !== undefined ? 'the service refunded a claimed link' : undefined;
      case 'cancelled_outside_stablebooks':
        return link &&
          (link.refundAfterClaimMs !== undefined ||
            eventsOf(link.referenceId).some(
              (e) => e.k === 'cancel' && (e.svc !== undefined || e.crash !== undefined),
            ))
          ? 'the service cancelled or refunded it and its answer never reached the books'
          : undefined;
      case 'claimed_after_expiry':
        // Equal payouts whose fundings were matched by amount: which pool is whose only their
        // order tells (docs/decisions.md, a gap left open), so a claim can land on a link our
        // books expired.
        if (!link) return undefined;
        if (world.payouts.some((q) => q !== link && q.token.address === link.token.address && q.A === link.A))
          return "a near-equal payout: its pool may be its twin's";
        return claimedAfterLastBlock(events, link.referenceId)
          ? 'its claim was sent after the last block before an expiry job: mined after our books expired it'
          : undefined;
      default:
        return undefined;
    }
  };
}

/**
 * webhook_api_mismatch: the webhook (`wh_<intent>_<n>`, the intent's n-th notified state) said
 * paid or not paid, and the service then held a state that says the other (a webhook delivered
 * late, reordered, or a state the service contradicted); any field but the status (and the paid
 * amount a read without amounts lacks) differing is no such cause, nor is a webhook of a status
 * on the way (ON_CHAIN and the like), which agrees with whatever followed.
 */
function staleWebhook(intent: SimIntent, details: Record<string, unknown>): boolean {
  const differences = (details.differences ?? {}) as Record<string, { api?: unknown }>;
  // The read of a state without amounts (not decided, or failed) has no actual_paid_amount.
  const stale = (k: string) => k === 'status' || (k === 'actual_paid_amount' && differences[k]?.api === null);
  const fields = Object.keys(differences);
  if (fields.length === 0 || !fields.every(stale)) return false;
  const n = Number(/_(\d+)$/.exec(String(details.webhook_id ?? ''))?.[1] ?? Number.NaN);
  const notified = intent.timeline.filter((s) => s.status !== CheckoutStatus.CREATED);
  const sent = notified[n];
  // A webhook of a status on the way agrees with any later one (webhookMismatch.ts): no cause.
  if (!sent || !isTerminalCheckoutStatus(sent.status as CheckoutStatus)) return false;
  const paid = sent.status === CONFIRMED;
  return intent.timeline.some((s) => s.at >= sent.at && (s.status === CONFIRMED) !== paid);
}

function shortRef(ref: string): string {
  return ref.replace(/0x[0-9a-f]{64}/gi, (h) => h.slice(0, 10));
}
