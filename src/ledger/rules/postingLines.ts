/**
 * Building blocks shared by the posting rules: debit and credit lines, and the one function that
 * turns lines into an entry draft. Every rule goes through `draftEntry`, so every rule drops zero
 * lines, needs two lines to write anything, and can never hand the poster an unbalanced entry.
 *
 * Glossary
 * - line / posting: one amount on one account; positive = debit, negative = credit, never zero;
 * - entry: a balanced set of lines written once under its idempotency key.
 */
import type { AccountRef } from '../accounts.ts';
import type { EntryDraft, EntryLine } from '../entryDraft.ts';
import { unbalancedAssets } from './balanceCheck.ts';

function assertNonNegative(amount: bigint, side: string, account: AccountRef): void {
  if (amount < 0n) {
    throw new RangeError(
      `${side} of ${amount} on ${account.kind}: a rule must pass a non-negative amount (a negative debit is a credit)`,
    );
  }
}

/** A debit line (positive amount). Zero is allowed here and dropped by `draftEntry`. */
export function debit(account: AccountRef, amount: bigint): EntryLine {
  assertNonNegative(amount, 'debit', account);
  return { account, amount };
}

/** A credit line (stored as a negative amount). Zero is allowed here and dropped by `draftEntry`. */
export function credit(account: AccountRef, amount: bigint): EntryLine {
  assertNonNegative(amount, 'credit', account);
  return { account, amount: -amount };
}

/**
 * The entry for `lines` without its zero lines, or null when fewer than two lines move anything
 * (nothing to write). Throws when the lines do not balance per asset or name another store's
 * accounts: that is a bug in the rule, never a property of the fact.
 */
export function draftEntry(head: Omit<EntryDraft, 'lines'>, lines: readonly EntryLine[]): EntryDraft | null {
  const moving = lines.filter((l) => l.amount !== 0n);
  if (moving.length < 2) return null;
  const off = unbalancedAssets(moving);
  if (off.size > 0) {
    const detail = [...off].map(([asset, sum]) => `${asset} off by ${sum}`).join(', ');
    throw new Error(`posting rule ${head.kind} built an unbalanced entry ${head.idempotencyKey}: ${detail}`);
  }
  const foreign = moving.find((l) => l.account.storeId !== head.storeId);
  if (foreign !== undefined) {
    throw new Error(
      `posting rule ${head.kind} put account of store ${foreign.account.storeId} into entry ${head.idempotencyKey} of store ${head.storeId}`,
    );
  }
  return { ...head, lines: moving };
}
