import { DECIMAL_STRING_RE } from './decimalAmount.ts';

/**
 * An exchange rate as an exact fraction: units of a currency per one coin, read from a plain
 * decimal string ("0.9234" is 9234/10000). Rates are never JS numbers: a float cannot hold 0.1,
 * and a valuation must be the same figure on every machine and every run.
 */
export interface ExactRate {
  /** The rate as given, canonical (no trailing fractional zeros): what reports and exports print. */
  text: string;
  numerator: bigint;
  denominator: bigint;
}

/** Reads a rate; undefined when the text is not a plain decimal above zero (the caller says why). */
export function parseExactRate(text: string): ExactRate | undefined {
  if (!DECIMAL_STRING_RE.test(text) || !/[1-9]/.test(text)) return undefined;
  const [whole = '', fraction = ''] = text.split('.');
  const trimmed = fraction.replace(/0+$/, '');
  const numerator = BigInt(whole + trimmed);
  const canonicalWhole = whole.replace(/^0+(?=\d)/, '');
  return {
    text: trimmed === '' ? canonicalWhole : `${canonicalWhole}.${trimmed}`,
    numerator,
    denominator: 10n ** BigInt(trimmed.length),
  };
}

/**
 * numerator / denominator rounded to a whole number, half to even (banker's rounding: a tie goes
 * to the even neighbour, so ties do not drift the totals one way; docs/decisions.md, "Valuation:
 * rounding"). The denominator must be positive.
 */
export function divideRoundHalfEven(numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n) throw new RangeError('denominator must be positive');
  const negative = numerator < 0n;
  const n = negative ? -numerator : numerator;
  let q = n / denominator;
  const twiceRest = (n % denominator) * 2n;
  if (twiceRest > denominator || (twiceRest === denominator && q % 2n === 1n)) q += 1n;
  return negative ? -q : q;
}
