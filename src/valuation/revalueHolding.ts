import type { ChosenRate } from './chooseRate.ts';
import { valuePosting } from './valueEntry.ts';

/**
 * Holding accounts: what the merchant holds or is owed in coins, revalued at a period's closing
 * rate (docs/accounting.md, "Valuation"). Income, expense, equity and liability accounts keep the
 * values of their entries' days.
 */
export const HOLDING_ACCOUNT_KINDS = [
  'assets:wallet',
  'assets:custody',
  'assets:claim_pool',
  'assets:refund_receivable',
  'assets:suspense',
  'assets:in_transit',
] as const;

export function isHoldingAccount(accountCode: string): boolean {
  return HOLDING_ACCOUNT_KINDS.some((kind) => accountCode.startsWith(`${kind}:`));
}

export interface Revaluation {
  /** Closing balance x closing rate, minor units. */
  closingValue: bigint;
  /** closingValue - valued cost: positive is an unrealised FX gain, negative a loss. */
  unrealised: bigint;
}

/**
 * A holding's period-end revaluation: its closing token balance at the closing rate against the
 * sum of its postings' values (its valued cost). Undefined without a closing rate (unvalued).
 */
export function revalueHolding(
  holding: { balance: bigint; decimals: number; valuedCost: bigint },
  closingRate: ChosenRate | undefined,
  minorUnit: number,
): Revaluation | undefined {
  if (closingRate === undefined) return undefined;
  const closingValue = valuePosting(holding.balance, holding.decimals, closingRate, minorUnit);
  return { closingValue, unrealised: closingValue - holding.valuedCost };
}
