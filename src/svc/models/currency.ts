/**
 * Currency: the fiat currency a checkout intent is priced in, as the service numbers it (value ->
 * ISO 4217 code; FOK, GGP, IMP and JEP are the non-ISO codes the service also uses). The service
 * has values above 73 that its interface does not show; we accept only the ones it documents.
 */
import { z } from 'zod';

// biome-ignore format: eight to a line reads as a table, in the spec's order
export const Currency = {
  USD: 1, AED: 2, AFN: 3, ALL: 4, AMD: 5, ANG: 6, AOA: 7, ARS: 8,
  AUD: 9, AWG: 10, AZN: 11, BAM: 12, BBD: 13, BDT: 14, BGN: 15, BHD: 16,
  BIF: 17, BMD: 18, BND: 19, BOB: 20, BRL: 21, BSD: 22, BTN: 23, BWP: 24,
  BYN: 25, BZD: 26, CAD: 27, CDF: 28, CHF: 29, CLP: 30, CNY: 31, COP: 32,
  CRC: 33, CUP: 34, CVE: 35, CZK: 36, DJF: 37, DKK: 38, DOP: 39, DZD: 40,
  EGP: 41, ERN: 42, ETB: 43, EUR: 44, FJD: 45, FKP: 46, FOK: 47, GBP: 48,
  GEL: 49, GGP: 50, GHS: 51, GIP: 52, GMD: 53, GNF: 54, GTQ: 55, GYD: 56,
  HKD: 57, HNL: 58, HRK: 59, HTG: 60, HUF: 61, IDR: 62, ILS: 63, IMP: 64,
  INR: 65, IQD: 66, IRR: 67, ISK: 68, JEP: 69, JMD: 70, JOD: 71, JPY: 72,
  KES: 73,
} as const;
export type Currency = (typeof Currency)[keyof typeof Currency];
export type CurrencyCode = keyof typeof Currency;

export const currencySchema = z.enum(Currency, {
  error: 'must be a Currency enum integer from 1 (USD) to 73 (KES)',
});

/**
 * Currency as the service reports it. The spec says values above 73 exist but are not listed; a
 * paid webhook or intent priced in one of them must still be read (currency is report metadata,
 * never money we post), so inbound we accept any positive integer and only requests are strict.
 */
export const reportedCurrencySchema = z
  .int()
  .positive({ error: 'must be a positive Currency enum integer' })
  // Stored as a PostgreSQL integer: a larger value would fail the intent's row on every retry.
  .max(2_147_483_647, { error: 'must be a Currency enum integer of at most 2^31 - 1' });

const CODES = new Map<number, CurrencyCode>(
  Object.entries(Currency).map(([code, value]) => [value, code as CurrencyCode]),
);

export function currencyCode(value: Currency): CurrencyCode {
  const code = CODES.get(value);
  if (code === undefined) throw new RangeError(`unknown Currency value ${value}`);
  return code;
}

export function currencyFromCode(code: string): Currency {
  if (!Object.hasOwn(Currency, code)) {
    throw new RangeError(
      `currency code ${JSON.stringify(code)} is not one the service documents (USD, EUR, GBP, ...)`,
    );
  }
  return Currency[code as CurrencyCode];
}

export function isCurrency(value: number): value is Currency {
  return CODES.has(value);
}
