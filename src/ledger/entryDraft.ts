import type { FindingDraft } from '../findings/finding.ts';
import type { AccountRef } from './accounts.ts';

/**
 * What a posting rule produces and the poster writes: an entry not yet in the database.
 *
 * Glossary
 * - fact: something a source told us (an intent's state, a webhook, a chain transfer);
 * - entry: one balanced movement in the ledger, written once per idempotency key;
 * - line / posting: one amount on one account; positive = debit, negative = credit;
 * - reversal: the mirrored entry that cancels an earlier one, linked by reverses_entry_id.
 */
export interface EntryLine {
  account: AccountRef;
  /** Token base units; positive = debit, negative = credit; never zero. */
  amount: bigint;
}

export interface EntryDraft {
  /** Derived from the fact that caused the entry; the same fact always gives the same key. */
  idempotencyKey: string;
  /** e.g. `checkout.confirmed`, `chain.proof`, `claim_link.expired`. */
  kind: string;
  /** When the movement happened (block time, or the service's time), not when we recorded it. */
  occurredAt: Date;
  storeId: string;
  ref: { type: string; id: string };
  lines: EntryLine[];
  memo?: string;
  /** Report context (fiat amount, currency, rate, tx hashes); JSON-safe values only. */
  metadata?: Record<string, unknown>;
}

/** The result of applying a rule to a fact: at most one entry, and any findings. */
export interface RuleOutcome {
  entry: EntryDraft | null;
  findings: FindingDraft[];
}
