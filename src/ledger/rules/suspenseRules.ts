/**
 * Posting rule for a person's classification of money in suspense: docs/accounting.md, rule 10
 * (classified suspense). Rule 9 books a transfer nothing explains to assets:suspense; a person who
 * knows what it was (the owner topping up a wallet, a stranger to be paid back, other income) moves
 * it out of suspense to the account it belongs in. Pure: the same fact always gives the same entry
 * and the same idempotency key.
 *
 * Glossary
 * - item: one live rule-9 entry whose money is still in suspense (its suspense entry);
 * - direction: `in` when the item credited suspense (money came into a wallet), `out` when it
 *   debited it (money left one);
 * - classification: what the person says the item is; it names the account the money moves to;
 * - revision: how many earlier classifications of the item were reversed (unclassified, or
 *   superseded by a rule); each classification books under a key of its own.
 */

import { type AccountKind, account, type Token } from '../accounts.ts';
import type { EntryDraft } from '../entryDraft.ts';
import { credit, debit, draftEntry } from './postingLines.ts';

export const SUSPENSE_CLASSIFICATIONS = [
  'owner_contribution',
  'owner_withdrawal',
  'refund_due',
  'income_other',
] as const;

export type SuspenseClassification = (typeof SUSPENSE_CLASSIFICATIONS)[number];

export type SuspenseDirection = 'in' | 'out';

/** Where each classification moves the money, and which direction of item it can explain. */
const TARGETS: Record<SuspenseClassification, { account: AccountKind; direction: SuspenseDirection }> = {
  owner_contribution: { account: 'equity:owner_contributions', direction: 'in' },
  owner_withdrawal: { account: 'equity:owner_transfers', direction: 'out' },
  refund_due: { account: 'liability:refunds_payable', direction: 'in' },
  income_other: { account: 'income:other', direction: 'in' },
};

export function isSuspenseClassification(value: string): value is SuspenseClassification {
  return (SUSPENSE_CLASSIFICATIONS as readonly string[]).includes(value);
}

/** The account kind a classification moves suspense to. */
export function classificationAccount(classification: SuspenseClassification): AccountKind {
  return TARGETS[classification].account;
}

/** The classifications that can explain an item of this direction. */
export function classificationsFor(direction: SuspenseDirection): SuspenseClassification[] {
  return SUSPENSE_CLASSIFICATIONS.filter((c) => TARGETS[c].direction === direction);
}

/**
 * Why a classification cannot explain an item of this direction, as one line for a person; null
 * when it can. Money that came in is no owner withdrawal, and money that left is no contribution.
 */
export function classificationProblem(
  classification: SuspenseClassification,
  direction: SuspenseDirection,
): string | null {
  if (TARGETS[classification].direction === direction) return null;
  const what = direction === 'in' ? 'money into a wallet' : 'money out of a wallet';
  return `${classification} cannot explain ${what}; use ${classificationsFor(direction).join(', ')}`;
}

/** `suspense:classified:<suspense entry id>`, then `:r<n>` for the n-th classification after a reversal. */
export function suspenseClassifiedKey(suspenseEntryId: bigint, revision = 0): string {
  const base = `suspense:classified:${suspenseEntryId}`;
  return revision > 0 ? `${base}:r${revision}` : base;
}

/** Rule 10 input: one item in suspense and what a person says it is. */
export interface SuspenseClassifiedFact {
  storeId: string;
  /** The rule-9 entry whose money is in suspense. */
  suspenseEntryId: bigint;
  /** The entry's ref (the transfer), so the classification is listed beside it. */
  ref: { type: string; id: string };
  token: Token;
  direction: SuspenseDirection;
  /** The item's value in base units, positive. */
  amount: bigint;
  classification: SuspenseClassification;
  /** Earlier classifications of this item that were reversed. */
  revision: number;
  /** When the person classified it: the entry is dated then. */
  classifiedAt: Date;
  classifiedBy: string;
  note: string;
}

/**
 * Rule 10: money in (suspense credited by rule 9): debit assets:suspense X, credit the
 * classification's account X. Money out: debit the classification's account X, credit
 * assets:suspense X. The wallet's account is not touched, so the balance proof is unchanged. A
 * classification that cannot explain the direction is a caller's bug here (check it first with
 * classificationProblem).
 */
export function suspenseClassified(fact: SuspenseClassifiedFact): EntryDraft {
  const problem = classificationProblem(fact.classification, fact.direction);
  if (problem !== null) throw new RangeError(`suspense entry ${fact.suspenseEntryId}: ${problem}`);
  if (fact.amount <= 0n)
    throw new RangeError(`suspense entry ${fact.suspenseEntryId}: amount ${fact.amount} is not positive`);
  if (!Number.isInteger(fact.revision) || fact.revision < 0)
    throw new RangeError(`suspense entry ${fact.suspenseEntryId}: invalid revision ${fact.revision}`);
  const suspense = account('assets:suspense', fact.storeId, fact.token);
  const target = account(classificationAccount(fact.classification), fact.storeId, fact.token);
  const lines =
    fact.direction === 'in'
      ? [debit(suspense, fact.amount), credit(target, fact.amount)]
      : [debit(target, fact.amount), credit(suspense, fact.amount)];
  const entry = draftEntry(
    {
      idempotencyKey: suspenseClassifiedKey(fact.suspenseEntryId, fact.revision),
      kind: 'suspense.classified',
      occurredAt: fact.classifiedAt,
      storeId: fact.storeId,
      ref: fact.ref,
      memo: fact.note,
      metadata: {
        classification: fact.classification,
        suspense_entry_id: fact.suspenseEntryId.toString(),
        classified_by: fact.classifiedBy,
        ...(fact.revision > 0 ? { revision: fact.revision } : {}),
      },
    },
    lines,
  );
  // Two non-zero lines of one asset always make an entry.
  if (entry === null) throw new Error(`suspense entry ${fact.suspenseEntryId}: nothing to book`);
  return entry;
}
