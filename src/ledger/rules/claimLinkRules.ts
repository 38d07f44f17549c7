/**
 * Posting rules for the claim-link lifecycle: docs/accounting.md, rules 5 (funded; extra fees
 * proven on chain), 6 (claimed), 7 (cancelled or expired) and 8 (refund arrived). Pure: the same
 * fact always gives the same outcome and the same idempotency key.
 *
 * Glossary
 * - link: one claim-link auto-payout; `amount` is its claimable amount as the service sent it;
 * - custody: the business wallet that funds links and receives their refunds;
 * - pool: the service's wallet holding funded, unclaimed links (assets:claim_pool in our books);
 * - receivable: what a cancelled or expired link owes us until its refund arrives: the link
 *   amount at close, cleared by the refund's pieces (an excess in the clearing piece is a funding
 *   overpayment returned, credited to payout_fees);
 * - expiry: 14 days after funding, for a link neither claimed nor cancelled.
 *
 * Keys: facts from the API are keyed by link (`claim_link:funded:<id>`, `claim_link:closed:<id>`);
 * facts proven on chain also carry the transfer's inclusion (chain, tx, log index, block hash), so
 * after a reorg the re-included transfer posts again once the orphaned entry is reversed (rule 3).
 * Cancel and expiry share one key: a link closes once, whichever fact arrives first.
 */

import type { FindingDraft } from '../../findings/finding.ts';
import { bigintMin } from '../../money/bigintMin.ts';
import { formatDecimalAmount, parseDecimalAmount } from '../../money/decimalAmount.ts';
import { type AccountKind, account, type Token } from '../accounts.ts';
import type { RuleOutcome } from '../entryDraft.ts';
import {
  assertTokenOfTransfer,
  assertTransferShape,
  type ChainTransferFact,
  chainInclusionKeyPart,
  chainTransferDetails,
  chainTransferId,
  sameAddress,
} from './chainTransferFact.ts';
import { credit, debit, draftEntry } from './postingLines.ts';

/** A funded, unclaimed link expires this long after funding (spec: 14-day expiry). */
export const CLAIM_LINK_EXPIRY_MS = 14 * 24 * 60 * 60 * 1000;

export function claimLinkExpiresAt(fundedAt: Date): Date {
  return new Date(fundedAt.getTime() + CLAIM_LINK_EXPIRY_MS);
}

/** True from the moment 14 days have elapsed since funding. */
export function isExpired(fundedAt: Date, now: Date): boolean {
  return now.getTime() >= claimLinkExpiresAt(fundedAt).getTime();
}

/** What every claim-link fact names: the link, its token and its amount as the service sent it. */
export interface ClaimLinkFactBase {
  storeId: string;
  claimLinkId: string;
  /** The accepted token of the link's chain and coin, from the chain registry. */
  token: Token;
  /** The link's claimable amount, decimal string as sent (create result `amount`). */
  amount: string;
}

/** Rule 5: create-and-fund returned success. */
export interface ClaimLinkFundedFact extends ClaimLinkFactBase {
  occurredAt: Date;
  referenceId?: string | null;
  fundingTxHash?: string | null;
}

/** A final chain transfer that concerns a link: its funding, its claim, or its refund. */
export interface ClaimLinkTransferFact extends ClaimLinkFactBase {
  /** The accepted token of `transfer.tokenAddress` must be `token`. */
  transfer: ChainTransferFact;
}

/**
 * Rule 5 on chain: the funding, which may be several Transfer logs of one transaction into the
 * pool (principal and fee apart, say). `transfer` is the first of them (lowest log index): the
 * entry carries its inclusion in its key, so one funding books one entry whichever of its logs
 * the matcher reads first, and rule 3 reverses it through that log. `otherLogs` are the rest.
 */
export interface ClaimLinkFundingFact extends ClaimLinkTransferFact {
  otherLogs?: readonly ChainTransferFact[];
  /**
   * The link's funding before this piece (its live funding allocations of other transactions: a
   * partial deposit, a first funding, a top-up); 0 for the usual one-transfer funding.
   */
  fundedBefore?: bigint;
  /** The funding fee the link's earlier pieces booked (live `claim_link.funding_fee` entries). */
  feeBefore?: bigint;
}

/** Rule 7, cancel: the cancel call succeeded, or answered 50108 with details.status cancelled. */
export interface ClaimLinkCancelledFact extends ClaimLinkFactBase {
  occurredAt: Date;
}

/** Rule 7, expiry: a funded link, neither claimed nor cancelled, checked at `now`. */
export interface ClaimLinkExpiryFact extends ClaimLinkFactBase {
  fundedAt: Date;
  now: Date;
}

export function claimLinkFundedKey(claimLinkId: string): string {
  return `claim_link:funded:${claimLinkId}`;
}
export function claimLinkFundingFeeKey(claimLinkId: string, transfer: ChainTransferFact): string {
  return `claim_link:funding_fee:${claimLinkId}:${chainInclusionKeyPart(transfer)}`;
}
export function claimLinkClaimedKey(claimLinkId: string, transfer: ChainTransferFact): string {
  return `claim_link:claimed:${claimLinkId}:${chainInclusionKeyPart(transfer)}`;
}
/** One key for cancel and expiry: a link closes once. */
export function claimLinkClosedKey(claimLinkId: string): string {
  return `claim_link:closed:${claimLinkId}`;
}
export function claimLinkRefundedKey(claimLinkId: string, transfer: ChainTransferFact): string {
  return `claim_link:refunded:${claimLinkId}:${chainInclusionKeyPart(transfer)}`;
}

function linkRef(claimLinkId: string): FindingDraft['ref'] {
  return { type: 'claim_link', id: claimLinkId };
}

function linkAmount(fact: ClaimLinkFactBase): bigint {
  return parseDecimalAmount(fact.amount, fact.token.decimals);
}

function accounts(fact: ClaimLinkFactBase) {
  return (kind: AccountKind) => account(kind, fact.storeId, fact.token);
}

function checkTransfer(fact: ClaimLinkTransferFact): void {
  assertTransferShape(fact.transfer);
  assertTokenOfTransfer(fact.token, fact.transfer);
}

/** Rule 5, API success: debit claim_pool amount, credit custody amount. */
export function claimLinkFunded(fact: ClaimLinkFundedFact): RuleOutcome {
  const amount = linkAmount(fact);
  const acct = accounts(fact);
  const entry = draftEntry(
    {
      idempotencyKey: claimLinkFundedKey(fact.claimLinkId),
      kind: 'claim_link.funded',
      occurredAt: fact.occurredAt,
      storeId: fact.storeId,
      ref: linkRef(fact.claimLinkId),
      metadata: {
        amount: fact.amount,
        reference_id: fact.referenceId ?? null,
        funding_tx_hash: fact.fundingTxHash ?? null,
      },
    },
    [debit(acct('assets:claim_pool'), amount), credit(acct('assets:custody'), amount)],
  );
  return { entry, findings: [] };
}

/**
 * Rule 5, funding proven on chain, one piece at a time: X = the link's funding with this piece
 * (what earlier pieces funded plus this transaction's logs into the pool). X > amount: debit
 * payout_fees, credit custody, the new excess only (X - amount - the fee earlier pieces booked),
 * under this piece's inclusion. X = amount: nothing. X < amount: nothing booked and a
 * `funding_mismatch` finding naming the remainder (custody was credited more than left it, so far).
 */
export function claimLinkFundingProven(fact: ClaimLinkFundingFact): RuleOutcome {
  checkTransfer(fact);
  const others = fact.otherLogs ?? [];
  for (const log of others) checkFundingLog(fact, log);
  const amount = linkAmount(fact);
  const piece = others.reduce((sum, log) => sum + log.amount, fact.transfer.amount);
  const before = fact.fundedBefore ?? 0n;
  const feeBefore = fact.feeBefore ?? 0n;
  const X = before + piece;
  const fmt = (u: bigint) => formatDecimalAmount(u, fact.token.decimals);
  // One log: the metadata it always had; several: what they add up to, and which they are; a
  // later piece: what the link was funded with before it.
  const logs = {
    ...(others.length === 0
      ? {}
      : { funded: fmt(piece), log_indexes: [fact.transfer.logIndex, ...others.map((l) => l.logIndex)] }),
    ...(before === 0n && feeBefore === 0n ? {} : { funded_before: fmt(before), fee_before: fmt(feeBefore) }),
  };
  if (X < amount) {
    return {
      entry: null,
      findings: [
        {
          kind: 'funding_mismatch',
          severity: 'warning',
          ref: linkRef(fact.claimLinkId),
          details: {
            amount: fact.amount,
            funded_on_chain: fmt(X),
            shortfall: fmt(amount - X),
            token: fact.token.symbol,
            ...chainTransferDetails(fact.transfer),
            ...logs,
          },
        },
      ],
    };
  }
  const acct = accounts(fact);
  // Never below zero: a piece orphaned since an earlier piece booked its fee leaves that fee
  // booked (the re-included piece then books nothing new).
  const excess = X - amount - feeBefore;
  const fee = excess > 0n ? excess : 0n;
  const entry = draftEntry(
    {
      idempotencyKey: claimLinkFundingFeeKey(fact.claimLinkId, fact.transfer),
      kind: 'claim_link.funding_fee',
      occurredAt: fact.transfer.occurredAt,
      storeId: fact.storeId,
      ref: linkRef(fact.claimLinkId),
      metadata: { amount: fact.amount, ...chainTransferDetails(fact.transfer), ...logs },
    },
    [debit(acct('expense:payout_fees'), fee), credit(acct('assets:custody'), fee)],
  );
  return { entry, findings: [] };
}

/** Another log of the same funding: same inclusion, token, sender and pool, after the first. */
function checkFundingLog(fact: ClaimLinkFundingFact, log: ChainTransferFact): void {
  assertTransferShape(log);
  assertTokenOfTransfer(fact.token, log);
  const first = fact.transfer;
  const same =
    log.chainId === first.chainId &&
    sameAddress(log.txHash, first.txHash) &&
    sameAddress(log.blockHash, first.blockHash) &&
    sameAddress(log.from, first.from) &&
    sameAddress(log.to, first.to) &&
    log.logIndex > first.logIndex;
  if (!same) {
    throw new RangeError(
      `transfer ${chainTransferId(log)} is not another log of funding ${chainTransferId(first)} ` +
        '(same transaction, block, sender and pool, after the first log)',
    );
  }
}

/**
 * Rule 6: the recipient claimed (transfer out of the pool wallet): debit payouts, credit
 * claim_pool, both the link amount. A transfer of another value is booked at the link amount
 * (what the pool held for it) with an `amount_mismatch` finding.
 */
export function claimLinkClaimed(fact: ClaimLinkTransferFact): RuleOutcome {
  return claimOutOf(fact, 'assets:claim_pool', {}, []);
}

/** A claim that became final after our books expired its link (rule 7 posted, no refund yet). */
export interface ClaimLinkClaimedAfterExpiryFact extends ClaimLinkTransferFact {
  /** When our books expired the link (the expiry entry's occurred_at). */
  expiredAt: Date;
}

/**
 * Rule 6 for a link whose expiry (rule 7) our books posted before its claim was final: the money
 * went to the recipient, so the receivable the expiry created will never be refunded. Debit
 * payouts, credit refund_receivable: rule 6 and the undoing of rule 7 in one entry, under rule 6's
 * key (the claim's inclusion), so a reorg's rule 3 reverses both at once (the receivable is owed
 * again, as it was) and a re-included claim posts it again. A `claimed_after_expiry` finding tells
 * a person that our expiry was wrong.
 */
export function claimLinkClaimedAfterExpiry(fact: ClaimLinkClaimedAfterExpiryFact): RuleOutcome {
  return claimOutOf(fact, 'assets:refund_receivable', { after_expiry: fact.expiredAt.toISOString() }, [
    {
      kind: 'claimed_after_expiry',
      severity: 'warning',
      ref: linkRef(fact.claimLinkId),
      details: {
        what: 'the link was claimed on chain, but our books had expired it: the expiry is undone by the claim entry',
        amount: fact.amount,
        expired_at: fact.expiredAt.toISOString(),
        claimed_at: fact.transfer.occurredAt.toISOString(),
        token: fact.token.symbol,
        ...chainTransferDetails(fact.transfer),
      },
    },
  ]);
}

/** A claim that became final after our books cancelled its link (rule 7 posted, no refund yet). */
export interface ClaimLinkClaimedAfterCancelFact extends ClaimLinkTransferFact {
  /** When our books cancelled the link (payouts.cancelled_at). */
  cancelledAt: Date;
}

/**
 * Rule 6 for a link the service let us cancel while its claim was already on chain (the cancel
 * answered success, the claim then final): the recipient has the money, so the receivable the
 * cancel created will never be refunded. The same entry as a claim after expiry (debit payouts,
 * credit refund_receivable, rule 6's key), with a `claimed_after_cancel` finding: the service's
 * answer and the chain disagree, and the chain is what the books follow.
 */
export function claimLinkClaimedAfterCancel(fact: ClaimLinkClaimedAfterCancelFact): RuleOutcome {
  return claimOutOf(fact, 'assets:refund_receivable', { after_cancel: fact.cancelledAt.toISOString() }, [
    {
      kind: 'claimed_after_cancel',
      severity: 'warning',
      ref: linkRef(fact.claimLinkId),
      details: {
        what: 'the link was claimed on chain, but the service had accepted our cancel: the cancel is undone by the claim entry',
        amount: fact.amount,
        cancelled_at: fact.cancelledAt.toISOString(),
        claimed_at: fact.transfer.occurredAt.toISOString(),
        token: fact.token.symbol,
        ...chainTransferDetails(fact.transfer),
      },
    },
  ]);
}

function claimOutOf(
  fact: ClaimLinkTransferFact,
  from: 'assets:claim_pool' | 'assets:refund_receivable',
  metadata: Record<string, unknown>,
  findings: FindingDraft[],
): RuleOutcome {
  checkTransfer(fact);
  const amount = linkAmount(fact);
  const acct = accounts(fact);
  const all = [...findings];
  if (fact.transfer.amount !== amount) {
    all.push({
      kind: 'amount_mismatch',
      severity: 'info',
      ref: linkRef(fact.claimLinkId),
      details: {
        what: 'claim transfer value differs from the link amount',
        amount: fact.amount,
        transferred: formatDecimalAmount(fact.transfer.amount, fact.token.decimals),
        token: fact.token.symbol,
        ...chainTransferDetails(fact.transfer),
      },
    });
  }
  const entry = draftEntry(
    {
      idempotencyKey: claimLinkClaimedKey(fact.claimLinkId, fact.transfer),
      kind: 'claim_link.claimed',
      occurredAt: fact.transfer.occurredAt,
      storeId: fact.storeId,
      ref: linkRef(fact.claimLinkId),
      metadata: { amount: fact.amount, ...metadata, ...chainTransferDetails(fact.transfer) },
    },
    [debit(acct('expense:payouts'), amount), credit(acct(from), amount)],
  );
  return { entry, findings: all };
}

function closeEntry(
  fact: ClaimLinkFactBase,
  kind: string,
  occurredAt: Date,
  metadata: Record<string, unknown>,
) {
  const amount = linkAmount(fact);
  const acct = accounts(fact);
  return draftEntry(
    {
      idempotencyKey: claimLinkClosedKey(fact.claimLinkId),
      kind,
      occurredAt,
      storeId: fact.storeId,
      ref: linkRef(fact.claimLinkId),
      metadata: { amount: fact.amount, ...metadata },
    },
    [debit(acct('assets:refund_receivable'), amount), credit(acct('assets:claim_pool'), amount)],
  );
}

/** Rule 7, cancel: debit refund_receivable, credit claim_pool (kind `claim_link.cancelled`). */
export function claimLinkCancelled(fact: ClaimLinkCancelledFact): RuleOutcome {
  return { entry: closeEntry(fact, 'claim_link.cancelled', fact.occurredAt, {}), findings: [] };
}

/**
 * Rule 7, expiry: once `isExpired(fundedAt, now)`, the same entry as a cancel with kind
 * `claim_link.expired`, dated at the moment of expiry. Before that: nothing (entry null), so a
 * scheduler may call it on every pass. The caller vouches that the link is neither claimed nor
 * cancelled.
 */
export function claimLinkExpired(fact: ClaimLinkExpiryFact): RuleOutcome {
  if (!isExpired(fact.fundedAt, fact.now)) return { entry: null, findings: [] };
  const expiresAt = claimLinkExpiresAt(fact.fundedAt);
  return {
    entry: closeEntry(fact, 'claim_link.expired', expiresAt, {
      funded_at: fact.fundedAt.toISOString(),
      expired_at: expiresAt.toISOString(),
    }),
    findings: [],
  };
}

/**
 * Rule 8, one piece at a time: a transfer of value R from the link's pool to custody while the
 * link's entries hold E in refund_receivable (the link amount unless earlier pieces arrived):
 * debit custody R, credit refund_receivable min(R, E); R > E: credit payout_fees R - E (a funding
 * overpayment returned). R < E leaves E - R owed: a refund may come in several transfers, and a
 * first piece cannot be told from a short refund, so nothing is written off as fees (the rest
 * waits in the receivable, and refund_overdue says so). A transfer of 0 is no refund (anyone can
 * emit one): no entry.
 */
export function claimLinkRefunded(fact: ClaimLinkTransferFact & { receivable?: bigint }): RuleOutcome {
  checkTransfer(fact);
  const E = fact.receivable ?? linkAmount(fact);
  const R = fact.transfer.amount;
  if (R === 0n || E <= 0n) return { entry: null, findings: [] };
  const acct = accounts(fact);
  const cleared = bigintMin(R, E);
  const fmt = (units: bigint) => formatDecimalAmount(units, fact.token.decimals);
  const entry = draftEntry(
    {
      idempotencyKey: claimLinkRefundedKey(fact.claimLinkId, fact.transfer),
      kind: 'claim_link.refunded',
      occurredAt: fact.transfer.occurredAt,
      storeId: fact.storeId,
      ref: linkRef(fact.claimLinkId),
      metadata: {
        amount: fact.amount,
        refunded: fmt(R),
        receivable_before: fmt(E),
        receivable_left: fmt(E - cleared),
        ...chainTransferDetails(fact.transfer),
      },
    },
    [
      debit(acct('assets:custody'), R),
      credit(acct('assets:refund_receivable'), cleared),
      credit(acct('expense:payout_fees'), R - cleared),
    ],
  );
  return { entry, findings: [] };
}
