import { divideRoundHalfEven } from '../money/exactRate.ts';
import type { ChosenRate } from './chooseRate.ts';

/** One posting as the valuation needs it: exact base units of a token of known decimals. */
export interface PostingToValue {
  accountCode: string;
  /** Token symbol (USDT, USDC): the rates are per symbol, not per contract. */
  symbol: string;
  decimals: number;
  /** Base units, positive = debit (docs/accounting.md, "Ledger tables"). */
  amount: bigint;
}

export interface ValuedPosting extends PostingToValue {
  /** Minor units of the functional currency (cents for EUR), or null: unvalued, never zero. */
  value: bigint | null;
  rate: ChosenRate | null;
}

export interface ValuedEntry {
  postings: ValuedPosting[];
  /**
   * The rounding line, in minor units: minus the sum of the postings' values, so the valued entry
   * nets to zero in fiat. Null when a posting is unvalued (the entry has no fiat total to close).
   */
  rounding: bigint | null;
  /** Symbols no rate valued: each is a `valuation_rate_missing` finding. */
  missing: string[];
}

/** Name of the rounding line wherever it is shown (report, exports). */
export const ROUNDING_ACCOUNT = 'fx:rounding';

/**
 * Values one posting: amount x rate, rounded half to even to the currency's minor unit. This is
 * the one place a valuation rounds; everything else adds these whole minor units.
 */
export function valuePosting(amount: bigint, decimals: number, rate: ChosenRate, minorUnit: number): bigint {
  return divideRoundHalfEven(
    amount * rate.rate.numerator * 10n ** BigInt(minorUnit),
    rate.rate.denominator * 10n ** BigInt(decimals),
  );
}

/**
 * Values an entry's postings in the functional currency. Pure: the caller chooses each symbol's
 * rate (chooseRate) for the entry's date; nothing here reads or writes the ledger, so a late rate
 * only means valuing again.
 */
export function valueEntry(
  postings: readonly PostingToValue[],
  rateFor: (symbol: string) => ChosenRate | undefined,
  minorUnit: number,
): ValuedEntry {
  const missing = new Set<string>();
  let total = 0n;
  const valued = postings.map((p): ValuedPosting => {
    const rate = rateFor(p.symbol);
    if (rate === undefined) {
      missing.add(p.symbol);
      return { ...p, value: null, rate: null };
    }
    const value = valuePosting(p.amount, p.decimals, rate, minorUnit);
    total += value;
    return { ...p, value, rate };
  });
  return { postings: valued, rounding: missing.size > 0 ? null : -total, missing: [...missing] };
}
