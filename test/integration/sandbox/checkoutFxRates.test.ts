/**
 * The sandbox's FX table and conversion (pure, no sandbox needed): every documented Currency has a
 * rate, and fiat cents convert to coin base units exactly, rounded half-up.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  divideRoundHalfUp,
  FX_RATES,
  fiatCentsToCoinUnits,
  fxRate,
} from '../../../src/sandbox/checkout/fxRates.ts';
import { Currency } from '../../../src/svc/models/currency.ts';

describe('FX rate table', () => {
  it('behavior: every Currency 1..73 has a positive decimal-string rate', () => {
    const values = Object.values(Currency);
    expect(values).toHaveLength(73);
    for (const value of values) expect(fxRate(value)).toMatch(/^(?!0+(?:\.0+)?$)\d+(?:\.\d+)?$/);
    expect(Object.keys(FX_RATES)).toHaveLength(73);
    expect(fxRate(Currency.USD)).toBe('1');
    expect(fxRate(Currency.EUR)).toBe('0.92');
    expect(fxRate(Currency.JPY)).toBe('151.3');
  });

  it.each([
    ['EUR 10.00 at 0.92', 1000n, '0.92', 6, 10_869_565n],
    ['BHD 10.00 at 0.376 (.5957446 rounds up)', 1000n, '0.376', 6, 26_595_745n],
    ['USD 0.01 at 1', 1n, '1', 6, 10_000n],
    ['a half unit rounds up', 1n, '20000', 6, 1n],
    ['just under half rounds down', 1n, '20000.1', 6, 0n],
    ['JPY 1513.00 at 151.3 on 18 decimals', 151_300n, '151.3', 18, 10n ** 19n],
    ['zero cents', 0n, '0.92', 6, 0n],
    ['negative cents mirror positive ones (EUR -10.00)', -1000n, '0.92', 6, -10_869_565n],
    ['a negative half unit rounds away from zero', -1n, '20000', 6, -1n],
  ])('behavior: %s', (_name, cents, rate, decimals, expected) => {
    expect(fiatCentsToCoinUnits(cents, rate, decimals)).toBe(expected);
  });

  it('property: the result is the exact quotient rounded half-up (within half a base unit)', () => {
    const currencies = Object.values(Currency);
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: BigInt(Number.MAX_SAFE_INTEGER) }),
        fc.constantFrom(...currencies),
        fc.constantFrom(6, 18),
        (cents, currency, decimals) => {
          const rate = fxRate(currency);
          const [whole = '', fraction = ''] = rate.split('.');
          const num = BigInt(whole + fraction);
          const den = 10n ** BigInt(fraction.length);
          const units = fiatCentsToCoinUnits(cents, rate, decimals);
          // exact value = cents * 10^d * den / (100 * num); |units - exact| <= 1/2, ties up.
          const exactNum = cents * 10n ** BigInt(decimals) * den;
          const d = 100n * num;
          const diff2 = 2n * (units * d - exactNum); // 2 * (units - exact) * d
          expect(diff2 <= d && diff2 > -d).toBe(true);
        },
      ),
    );
  });

  it('error: divideRoundHalfUp refuses a non-positive divisor', () => {
    expect(() => divideRoundHalfUp(1n, 0n)).toThrow(RangeError);
    expect(divideRoundHalfUp(5n, 2n)).toBe(3n);
  });
});
