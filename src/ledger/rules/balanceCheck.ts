/**
 * Balance check: the postings of an entry sum to zero per asset (docs/accounting.md, "Ledger tables", enforced
 * again by PostgreSQL). The rules use it to refuse a draft they built wrong; the poster uses it as
 * a pre-check before the database would reject the entry.
 *
 * Glossary
 * - line / posting: one amount on one account; positive = debit, negative = credit;
 * - asset: `<eip155 chain id>:<token contract, lowercase>` (`assetOf` in ../accounts.ts).
 */
import { assetOf } from '../accounts.ts';
import type { EntryLine } from '../entryDraft.ts';

/** Sum of the lines per asset. An asset whose lines cancel out is present with 0n. */
export function sumByAsset(lines: readonly EntryLine[]): Map<string, bigint> {
  const sums = new Map<string, bigint>();
  for (const line of lines) {
    const asset = assetOf(line.account.token);
    sums.set(asset, (sums.get(asset) ?? 0n) + line.amount);
  }
  return sums;
}

/** The assets whose lines do not sum to zero, with the amount they are off by; empty when balanced. */
export function unbalancedAssets(lines: readonly EntryLine[]): Map<string, bigint> {
  const off = new Map<string, bigint>();
  for (const [asset, sum] of sumByAsset(lines)) {
    if (sum !== 0n) off.set(asset, sum);
  }
  return off;
}

export function isBalanced(lines: readonly EntryLine[]): boolean {
  return unbalancedAssets(lines).size === 0;
}
