/**
 * Posting rule for a person's correction of a leftover the rules leave "for a person"
 * (docs/accounting.md, "Corrections"): the rest of a `payment_amount_mismatch` in
 * assets:in_transit, the excess of rule 2 or the proven money of rule 4 in assets:suspense, the
 * in_transit a `confirmed_amounts_changed` leaves wrong. The ledger is append-only, so the
 * correction is one more entry that moves the leftover to the account a person names. Pure: the
 * same correction always gives the same entry and key.
 *
 * Glossary
 * - leftover: the signed balance an intent's own entries leave on the source account; positive
 *   (a debit) is money the books expect and do not have, negative (a credit) money they hold
 *   that nothing explains;
 * - source: the account the finding's kind names (assets:in_transit or assets:suspense);
 * - target: the account the person names, from the short list that fits the leftover's sign.
 */

import { type AccountKind, account, type Token } from '../accounts.ts';
import type { EntryDraft } from '../entryDraft.ts';
import { credit, debit, draftEntry } from './postingLines.ts';

/** The finding kinds a correction can settle, and where their leftover lies. */
export const CORRECTABLE_KINDS = [
  'payment_amount_mismatch',
  'proven_then_failed',
  'confirmed_amounts_changed',
] as const;
export type CorrectableKind = (typeof CORRECTABLE_KINDS)[number];

export type CorrectionSource = 'assets:in_transit' | 'assets:suspense';

/** A debit leftover is a loss to explain: what the books expected and did not get. */
const FOR_DEBIT: readonly AccountKind[] = [
  'expense:sales_shortfall',
  'expense:service_fees',
  'equity:owner_transfers',
];
/** A credit leftover is money held that nothing explains: whose it is. */
const FOR_CREDIT: readonly AccountKind[] = [
  'liability:customer_overpayments',
  'liability:refunds_payable',
  'income:other',
  'equity:owner_contributions',
];

export function isCorrectableKind(kind: string): kind is CorrectableKind {
  return (CORRECTABLE_KINDS as readonly string[]).includes(kind);
}

/**
 * Where a finding's leftover lies: rule 2's excess (`to_suspense` in its details) and rule 4's
 * proven money in suspense; the rest of a short payment, and a changed confirmation, in transit.
 */
export function correctionSource(kind: CorrectableKind, details: Record<string, unknown>): CorrectionSource {
  if (kind === 'proven_then_failed') return 'assets:suspense';
  if (kind === 'payment_amount_mismatch' && details.to_suspense !== undefined) return 'assets:suspense';
  return 'assets:in_transit';
}

/** The accounts a leftover of this sign may move to. */
export function correctionTargets(leftover: bigint): readonly AccountKind[] {
  return leftover > 0n ? FOR_DEBIT : FOR_CREDIT;
}

/** Why `to` cannot take this leftover, as one line for a person; null when it can. */
export function correctionTargetProblem(to: string, leftover: bigint): string | null {
  const allowed = correctionTargets(leftover);
  if ((allowed as readonly string[]).includes(to)) return null;
  const what =
    leftover > 0n ? 'money the books expected and did not get' : 'money held that nothing explains';
  return `--to: ${JSON.stringify(to)} cannot take ${what}; use ${allowed.join(', ')}`;
}

/** `correction:<correction id>`: each correction is a fact of its own, undone by a reversal. */
export function correctionKey(correctionId: bigint): string {
  return `correction:${correctionId}`;
}

export interface CorrectionFact {
  correctionId: bigint;
  storeId: string;
  /** The finding's ref (the intent), so the entry is listed with the intent's entries. */
  ref: { type: string; id: string };
  token: Token;
  from: CorrectionSource;
  to: AccountKind;
  /** The source's signed leftover before the correction (non-zero). */
  leftover: bigint;
  /** How much of it to move, positive, at most |leftover|. */
  amount: bigint;
  findingId: bigint;
  findingKind: CorrectableKind;
  note: string;
  madeBy: string;
  /** When the person made it: the entry is dated then. */
  madeAt: Date;
}

/**
 * A debit leftover L: debit the target, credit the source (the loss explained). A credit
 * leftover: debit the source, credit the target (the money given its owner). Either way the
 * source's leftover shrinks by the amount and never changes sign. A target that does not fit
 * or an amount out of range is a caller's bug here (check it first with correctionTargetProblem).
 */
export function adjustmentMoved(fact: CorrectionFact): EntryDraft {
  const id = fact.correctionId;
  const problem = correctionTargetProblem(fact.to, fact.leftover);
  if (problem !== null) throw new RangeError(`correction ${id}: ${problem}`);
  const whole = fact.leftover < 0n ? -fact.leftover : fact.leftover;
  if (fact.amount <= 0n || fact.amount > whole)
    throw new RangeError(`correction ${id}: amount ${fact.amount} is not in 1..${whole}`);
  const source = account(fact.from, fact.storeId, fact.token);
  const target = account(fact.to, fact.storeId, fact.token);
  const lines =
    fact.leftover > 0n
      ? [debit(target, fact.amount), credit(source, fact.amount)]
      : [debit(source, fact.amount), credit(target, fact.amount)];
  const entry = draftEntry(
    {
      idempotencyKey: correctionKey(id),
      kind: 'adjustment.moved',
      occurredAt: fact.madeAt,
      storeId: fact.storeId,
      ref: fact.ref,
      memo: fact.note,
      metadata: {
        correction_id: id.toString(),
        finding_id: fact.findingId.toString(),
        finding_kind: fact.findingKind,
        from_account: fact.from,
        to_account: fact.to,
        made_by: fact.madeBy,
        why: fact.note,
      },
    },
    lines,
  );
  if (entry === null) throw new Error(`correction ${id}: nothing to book`);
  return entry;
}
