/**
 * Posting rules for facts from the service about checkout intents (API polls and webhooks):
 * docs/accounting.md, rule 1 (intent CONFIRMED) and rule 4 (intent ends in a failure state).
 * Pure: the same fact always gives the same outcome and the same idempotency key.
 *
 * Glossary
 * - intent: one checkout the merchant asked a buyer to pay;
 * - fact: what the service told us about it, decimal strings exactly as sent;
 * - R, P, F, N: amount_coins (requested), actual_paid_amount, service_fee_amount,
 *   net_income_amount (reported as P - F);
 * - proven net: what the chain proved reached the merchant wallet for this intent;
 * - finding: a disagreement the caller writes to the findings table.
 */

import type { FindingDraft } from '../../findings/finding.ts';
import { formatDecimalAmount, parseDecimalAmount } from '../../money/decimalAmount.ts';
import { CheckoutStatus, checkoutStatusName } from '../../svc/models/checkoutStatus.ts';
import { type AccountKind, account, type Token } from '../accounts.ts';
import type { EntryDraft, RuleOutcome } from '../entryDraft.ts';
import { credit, debit, draftEntry } from './postingLines.ts';

/** A CONFIRMED intent, from a poll or a webhook completed with the full intent's fee fields. */
export interface CheckoutConfirmedFact {
  storeId: string;
  intentId: string;
  /** When the service confirmed the payment, not when we learnt it. */
  occurredAt: Date;
  /** The accepted token of the intent's chain_id and coin_contract, from the chain registry. */
  token: Token;
  /** R, decimal string as sent. */
  amountCoins: string;
  /** P, decimal string as sent. */
  actualPaidAmount: string;
  /** F, decimal string as sent; "0" when the buyer paid the merchant wallet directly. */
  serviceFeeAmount: string;
  /** N, decimal string as sent; should equal P - F. */
  netIncomeAmount: string;
  /** Fiat context for reports; all null for an intent priced natively in a stable coin. */
  fiat: { amountCents: bigint | null; currency: number | null; currencyRate: string | null };
  txHash?: string | null;
  txHash2?: string | null;
  /**
   * Base units the chain proved reached the merchant wallet for this intent. Used only when the
   * reported P - F != N: then the entry books N = provenNet and F = P - provenNet.
   */
  provenNet?: bigint;
  /**
   * How many earlier rule-1 entries of this intent were reversed (rule 4): the service said
   * CONFIRMED again after a failure, and the new confirmation is booked under its own key.
   */
  revision?: number;
}

export const CHECKOUT_FAILURE_STATUSES = [
  CheckoutStatus.FAILED,
  CheckoutStatus.REJECTED,
  CheckoutStatus.UNDERPAID,
  CheckoutStatus.CANCELED,
  CheckoutStatus.TIMEOUT,
] as const;
export type CheckoutFailureStatus = (typeof CHECKOUT_FAILURE_STATUSES)[number];

/** An intent that ended in FAILED, REJECTED, UNDERPAID, CANCELED or TIMEOUT. */
export interface CheckoutTerminalFailureFact {
  storeId: string;
  intentId: string;
  status: CheckoutFailureStatus;
  /** Whether the ledger holds a live (unreversed) rule-1 entry of this intent. */
  confirmedEntryPosted: boolean;
  /** That entry's revision (see CheckoutConfirmedFact.revision); 0 when absent. */
  revision?: number;
  /**
   * The intent's payment proven on chain (rule 2) and still in the merchant wallet: per token, what
   * its live `chain.payment_proven` entries credited to in_transit, less what a live suspense
   * entry of rule 4 holds already. Absent or empty when nothing was proven.
   */
  proven?: {
    /** When the failure was observed: the date of the reversal and of the suspense entry. */
    occurredAt: Date;
    amounts: ReadonlyArray<{ token: Token; amount: bigint }>;
  };
}

/**
 * Rule 4 may ask the poster to reverse the rule-1 entry. When its payment was proven already, it
 * also writes an entry of its own: the proven money leaves in_transit for suspense.
 */
export interface CheckoutTerminalFailureDecision extends RuleOutcome {
  /** `checkout.proven_reversed` (debit in_transit, credit suspense), or null. */
  entry: EntryDraft | null;
  /** Idempotency key of the entry to reverse with the poster's reverseEntry, or null. */
  reverse: string | null;
}

/**
 * The key of an intent's rule-1 entry. Revision 0 is the first confirmation; a confirmation booked
 * again after its entry was reversed is `:r<n>`, as for a chain transfer booked again after a
 * reorg, so that it is a new entry and not a replay of the reversed one.
 */
export function checkoutConfirmedKey(intentId: string, revision = 0): string {
  const key = `checkout:confirmed:${intentId}`;
  return revision > 0 ? `${key}:r${revision}` : key;
}

/**
 * The key of the entry rule 4 writes when it reverses a rule-1 entry whose payment was proven:
 * the revision is the reversed entry's, so each reversal has its own, and a later confirmation
 * reverses it (`reversal:<key>`) to bring the money back to the sale.
 */
export function checkoutProvenReversedKey(intentId: string, revision = 0): string {
  const key = `checkout:proven_reversed:${intentId}`;
  return revision > 0 ? `${key}:r${revision}` : key;
}

function intentRef(intentId: string): FindingDraft['ref'] {
  return { type: 'checkout_intent', id: intentId };
}

/**
 * Rule 1. Debit in_transit N, service_fees F, sales_shortfall max(R-P,0); credit sales R,
 * customer_overpayments max(P-R,0). Zero lines are left out.
 *
 * When P - F != N as reported the entry waits for the chain (null, finding
 * `fee_arithmetic_mismatch`) unless `provenNet` is given; then it books the proven figures and
 * still reports the finding. Throws AmountFormatError for an amount finer than the token.
 */
export function checkoutConfirmed(fact: CheckoutConfirmedFact): RuleOutcome {
  const { token } = fact;
  const R = parseDecimalAmount(fact.amountCoins, token.decimals);
  const P = parseDecimalAmount(fact.actualPaidAmount, token.decimals);
  const reportedF = parseDecimalAmount(fact.serviceFeeAmount, token.decimals);
  const reportedN = parseDecimalAmount(fact.netIncomeAmount, token.decimals);
  const ref = intentRef(fact.intentId);
  const fmt = (units: bigint) => formatDecimalAmount(units, token.decimals);
  const findings: FindingDraft[] = [];

  let N = reportedN;
  let F = reportedF;
  let netSource: 'reported' | 'chain' = 'reported';
  if (P - reportedF !== reportedN) {
    const details: Record<string, unknown> = {
      actual_paid_amount: fact.actualPaidAmount,
      service_fee_amount: fact.serviceFeeAmount,
      net_income_amount: fact.netIncomeAmount,
      expected_net_income_amount: fmt(P - reportedF),
      token: token.symbol,
      chain_id: token.chainId,
    };
    const mismatch = (extra: Record<string, unknown>): FindingDraft => ({
      kind: 'fee_arithmetic_mismatch',
      severity: 'warning',
      ref,
      details: { ...details, ...extra },
    });
    if (fact.provenNet === undefined) {
      findings.push(mismatch({ posted: false, waiting_for: 'chain proof of the net amount' }));
      return { entry: null, findings: [...findings, ...paidVersusRequested(fact, R, P, fmt)] };
    }
    if (fact.provenNet < 0n) throw new RangeError(`provenNet of intent ${fact.intentId} is negative`);
    if (fact.provenNet > P) {
      // The fee would be negative: the chain contradicts the paid amount too. Nothing is booked.
      findings.push(
        mismatch({
          posted: false,
          proven_net: fmt(fact.provenNet),
          reason: 'proven net exceeds actual_paid_amount',
        }),
      );
      return { entry: null, findings: [...findings, ...paidVersusRequested(fact, R, P, fmt)] };
    }
    N = fact.provenNet;
    F = P - fact.provenNet;
    netSource = 'chain';
    findings.push(mismatch({ posted: true, proven_net: fmt(N), derived_service_fee: fmt(F) }));
  }
  findings.push(...paidVersusRequested(fact, R, P, fmt));

  const acct = (kind: AccountKind) => account(kind, fact.storeId, token);
  const entry: EntryDraft | null = draftEntry(
    {
      idempotencyKey: checkoutConfirmedKey(fact.intentId, fact.revision),
      kind: 'checkout.confirmed',
      occurredAt: fact.occurredAt,
      storeId: fact.storeId,
      ref,
      metadata: {
        amount_coins: fact.amountCoins,
        actual_paid_amount: fact.actualPaidAmount,
        service_fee_amount: fact.serviceFeeAmount,
        net_income_amount: fact.netIncomeAmount,
        net_source: netSource,
        amount_cents: fact.fiat.amountCents === null ? null : fact.fiat.amountCents.toString(),
        currency: fact.fiat.currency,
        currency_rate: fact.fiat.currencyRate,
        tx_hash: fact.txHash ?? null,
        tx_hash_2: fact.txHash2 ?? null,
      },
    },
    [
      debit(acct('assets:in_transit'), N),
      debit(acct('expense:service_fees'), F),
      debit(acct('expense:sales_shortfall'), R > P ? R - P : 0n),
      credit(acct('income:sales'), R),
      credit(acct('liability:customer_overpayments'), P > R ? P - R : 0n),
    ],
  );
  return { entry, findings };
}

function paidVersusRequested(
  fact: CheckoutConfirmedFact,
  R: bigint,
  P: bigint,
  fmt: (units: bigint) => string,
): FindingDraft[] {
  if (P === R) return [];
  const under = P < R;
  return [
    {
      kind: under ? 'underpaid' : 'overpaid',
      severity: 'info',
      ref: intentRef(fact.intentId),
      details: {
        amount_coins: fact.amountCoins,
        actual_paid_amount: fact.actualPaidAmount,
        difference: fmt(under ? R - P : P - R),
        token: fact.token.symbol,
        chain_id: fact.token.chainId,
      },
    },
  ];
}

/**
 * Rule 4. A failed intent books nothing. If the ledger already holds its rule-1 entry (the service
 * said CONFIRMED, a terminal state, and now says otherwise), that entry is to be reversed and the
 * contradiction is a critical finding `confirmed_then_failed`. If rule 2 had proven its payment
 * (debit wallet, credit in_transit), the reversal alone would leave in_transit at minus the
 * proven money and the wallet unexplained: the proven money goes to suspense (debit in_transit,
 * credit suspense; kind `checkout.proven_reversed`), with a critical `proven_then_failed`.
 */
export function checkoutTerminalFailure(fact: CheckoutTerminalFailureFact): CheckoutTerminalFailureDecision {
  if (!(CHECKOUT_FAILURE_STATUSES as readonly number[]).includes(fact.status)) {
    throw new RangeError(
      `checkoutTerminalFailure takes FAILED, REJECTED, UNDERPAID, CANCELED or TIMEOUT; got status ${fact.status}`,
    );
  }
  if (!fact.confirmedEntryPosted) return { entry: null, reverse: null, findings: [] };
  const key = checkoutConfirmedKey(fact.intentId, fact.revision);
  const statusName = checkoutStatusName(fact.status);
  const findings: FindingDraft[] = [
    {
      kind: 'confirmed_then_failed',
      severity: 'critical',
      ref: intentRef(fact.intentId),
      details: { status: fact.status, status_name: statusName, reversed_entry: key },
    },
  ];
  const proven = (fact.proven?.amounts ?? []).filter((p) => p.amount !== 0n);
  if (!fact.proven || proven.length === 0) return { entry: null, reverse: key, findings };
  if (proven.some((p) => p.amount < 0n)) {
    throw new RangeError(`proven amount of intent ${fact.intentId} is negative`);
  }
  const suspenseKey = checkoutProvenReversedKey(fact.intentId, fact.revision);
  const entry = draftEntry(
    {
      idempotencyKey: suspenseKey,
      kind: 'checkout.proven_reversed',
      occurredAt: fact.proven.occurredAt,
      storeId: fact.storeId,
      ref: intentRef(fact.intentId),
      memo: `intent ended in ${statusName} after its payment was proven on chain`,
      metadata: { status: fact.status, status_name: statusName, reversed_entry: key },
    },
    proven.flatMap(({ token, amount }) => [
      debit(account('assets:in_transit', fact.storeId, token), amount),
      credit(account('assets:suspense', fact.storeId, token), amount),
    ]),
  );
  findings.push({
    kind: 'proven_then_failed',
    severity: 'critical',
    ref: intentRef(fact.intentId),
    details: {
      status: fact.status,
      status_name: statusName,
      suspense_entry: suspenseKey,
      proven: proven.map(({ token, amount }) => ({
        amount: formatDecimalAmount(amount, token.decimals),
        token: token.symbol,
        chain_id: token.chainId,
      })),
      what: 'the payment reached the merchant wallet; it waits in suspense until the service confirms the intent again or a person decides',
    },
  });
  return { entry, reverse: key, findings };
}
