import { StablebooksError } from '../errors/stablebooksError.ts';
/**
 * Decimal amount: a stable-coin amount as the service writes it ("12.5"), converted to and from
 * the token's base units (bigint). This is the only place a decimal string becomes money, so the
 * conversion is exact: an amount finer than the token's decimals is an error, never rounded.
 * Zeros beyond the decimals ("10.500000000" for 6) change no value, so they are read, not refused.
 */

/** Digits, optionally a dot and more digits. No sign, exponent, whitespace or bare dot. */
/**
 * Digits of a ledger amount in base units: postings are numeric(78,0) (docs/accounting.md, "Ledger tables"; a
 * uint256 has 78 digits). No amount with more can be booked in any token.
 */
export const POSTING_DIGITS = 78;

export const DECIMAL_STRING_RE = /^\d+(?:\.\d+)?$/;

/** ERC-20 `decimals()` is a uint8. */
const MAX_DECIMALS = 255;

export class AmountFormatError extends StablebooksError {
  override readonly name = 'AmountFormatError';
  readonly retryable = false;
  constructor(
    message: string,
    readonly text: string,
    readonly decimals: number,
  ) {
    super(message);
  }
}

function assertDecimals(decimals: number): void {
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > MAX_DECIMALS) {
    throw new RangeError(`token decimals must be an integer from 0 to ${MAX_DECIMALS}, got ${decimals}`);
  }
}

/** Quotes the offending text in a message without letting a huge input flood the logs. */
function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}...` : text);
}

export function parseDecimalAmount(text: string, decimals: number): bigint {
  assertDecimals(decimals);
  if (!DECIMAL_STRING_RE.test(text)) {
    throw new AmountFormatError(
      `amount ${quote(text)} is not a plain decimal string (digits with an optional fraction; no sign, exponent or spaces)`,
      text,
      decimals,
    );
  }
  const [whole = '', fraction = ''] = text.split('.');
  // Digits beyond the token's decimals are refused unless every one is a zero: "10.500000000"
  // is exactly 10.5 in a 6-decimal token, "10.5000001" cannot be held and is never rounded.
  if (/[^0]/.test(fraction.slice(decimals))) {
    throw new AmountFormatError(
      `amount ${quote(text)} has more precision than the token's ${decimals} decimals`,
      text,
      decimals,
    );
  }
  return BigInt(whole + fraction.slice(0, decimals).padEnd(decimals, '0'));
}

/** Canonical form: no trailing fractional zeros, no dot for a whole amount, '-' when negative. */
export function formatDecimalAmount(units: bigint, decimals: number): string {
  assertDecimals(decimals);
  const sign = units < 0n ? '-' : '';
  const digits = (units < 0n ? -units : units).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return `${sign}${whole}${fraction === '' ? '' : `.${fraction}`}`;
}

/**
 * Whether two decimal amounts as sent are the same number, exactly: "25", "25.00" and "025.0" are.
 * Both are read in base units of as many decimals as the finer of the two has (parseDecimalAmount,
 * bigint), so the comparison needs no token and never rounds. A missing amount equals only a
 * missing one; text that is not a plain decimal (the models refuse it) is compared as text.
 */
export function sameDecimalAmount(a: string | null, b: string | null): boolean {
  if (a === null || b === null) return a === b;
  if (!DECIMAL_STRING_RE.test(a) || !DECIMAL_STRING_RE.test(b)) return a === b;
  const decimals = Math.max(a.split('.')[1]?.length ?? 0, b.split('.')[1]?.length ?? 0);
  return parseDecimalAmount(a, decimals) === parseDecimalAmount(b, decimals);
}
