/**
 * Amounts on the wire. Stable-coin amounts travel as decimal strings and stay strings here; only
 * src/money/decimalAmount.ts turns them into base units, once the token's decimals are known.
 * Integer cents arrive as JSON numbers, which are exact only up to 2^53 - 1, so anything beyond
 * that (already corrupted by JSON.parse) is refused rather than trusted.
 */
import { z } from 'zod';
import { DECIMAL_STRING_RE, POSTING_DIGITS } from '../../money/decimalAmount.ts';

/** A non-negative decimal string such as "12.50". A JSON number is refused: it may already be rounded. */
export const decimalStringSchema = z
  .string({ error: 'must be a decimal string such as "12.50", never a JSON number' })
  .regex(DECIMAL_STRING_RE, {
    error: 'must be a plain decimal string: digits with an optional fraction, no sign, exponent or spaces',
  })
  // Digits, fraction included, at most a posting's: longer text would be refused by PostgreSQL
  // (numeric holds 131,072 integer digits) or by the ledger on every retry; whether one that fits
  // here also fits with its token's decimals, rule 1 checks (bookConfirmation).
  .refine((s) => s.replace('.', '').length <= POSTING_DIGITS, {
    error: `must have at most ${POSTING_DIGITS} digits`,
  });

/** Integer cents as a JSON number, read into a bigint. z.int() already stops at 2^53 - 1. */
export const centsSchema = z
  .int({ error: 'must be a non-negative integer number of cents' })
  .nonnegative({ error: 'must be a non-negative integer number of cents' })
  .transform((n) => BigInt(n));

/**
 * Integer cents we send: a positive bigint no larger than the service can hand back to us in a
 * webhook or intent as an exact JSON number.
 */
export const requestCentsSchema = z
  .bigint({ error: 'amount_cents must be a bigint' })
  .positive({ error: 'amount_cents must be greater than 0' })
  .max(BigInt(Number.MAX_SAFE_INTEGER), { error: 'amount_cents must not exceed 2^53 - 1' });
