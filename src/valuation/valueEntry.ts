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
 * 10^k for the exponents a valuation meets (token decimals, minor units), made once: a BigInt
 * power per posting was a visible part of an export's cost with --value (docs/benchmarks.md).
 */
const POWERS_OF_TEN = Array.from({ length: 40 }, (_, k) => 10n ** BigInt(k));
const tenTo = (k: number): bigint => POWERS_OF_TEN[k] ?? 10n ** BigInt(k);

/**
 * Values one posting: amount x rate, rounded half to even to the currency's minor unit. This is
 * the one place a valuation rounds; everything else adds these whole minor units.
 */
export function valuePosting(amount: bigint, decimals: number, rate: ChosenRate, minorUnit: number): bigint {
  // amount x n x 10^m / (d x 10^decimals); with decimals >= m the 10^m cancels, one product less.
  if (decimals >= minorUnit)
    return divideRoundHalfEven(
      amount * rate.rate.numerator,
      rate.rate.denominator * tenTo(decimals - minorUnit),
    );
  return divideRoundHalfEven(
    amount * rate.rate.numerator * tenTo(minorUnit - decimals),
    rate.rate.denominator,
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
  // Written for the export's hot loop (docs/benchmarks.md, "Journal export"): an entry's postings
  // are nearly always of one coin, so its rate is asked for once, and no Set is made unless a
  // rate is missing.
  let missing: Set<string> | null = null;
  let total = 0n;
  let lastSymbol: string | null = null;
  let lastRate: ChosenRate | undefined;
  const valued: ValuedPosting[] = [];
  for (const p of postings) {
    if (p.symbol !== lastSymbol) {
      lastSymbol = p.symbol;
      lastRate = rateFor(p.symbol);
    }
    const rate = lastRate;
    if (rate === undefined) {
      missing ??= new Set();
      missing.add(p.symbol);
      valued.push({
        accountCode: p.accountCode,
        symbol: p.symbol,
        decimals: p.decimals,
        amount: p.amount,
        value: null,
        rate: null,
      });
      continue;
    }
    const value = valuePosting(p.amount, p.decimals, rate, minorUnit);
    total += value;
    valued.push({
      accountCode: p.accountCode,
      symbol: p.symbol,
      decimals: p.decimals,
      amount: p.amount,
      value,
      rate,
    });
  }
  return { postings: valued, rounding: missing ? null : -total, missing: missing ? [...missing] : [] };
}
