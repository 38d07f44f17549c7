import { describe, expect, it } from 'vitest';
import {
  Currency,
  currencyCode,
  currencyFromCode,
  currencySchema,
  isCurrency,
} from '../../../../src/svc/models/currency.ts';

describe('Currency', () => {
  it('behavior: 73 values, 1..73, each once', () => {
    const values = Object.values(Currency);
    expect(values).toHaveLength(73);
    expect([...values].sort((a, b) => a - b)).toEqual(Array.from({ length: 73 }, (_, i) => i + 1));
  });

  it.each([
    [1, 'USD'],
    [9, 'AUD'],
    [27, 'CAD'],
    [29, 'CHF'],
    [44, 'EUR'],
    [48, 'GBP'],
    [47, 'FOK'],
    [72, 'JPY'],
    [73, 'KES'],
  ] as const)('behavior: %i is %s, both ways', (value, code) => {
    expect(currencySchema.parse(value)).toBe(value);
    expect(currencyCode(value)).toBe(code);
    expect(currencyFromCode(code)).toBe(value);
  });

  it.each([0, 74, -1, 1.5, 'USD', '1', null])('error: rejects %j', (v) => {
    expect(currencySchema.safeParse(v).success).toBe(false);
  });

  it('error: unknown code', () => {
    expect(() => currencyFromCode('usd')).toThrow(/not one the service documents/);
    expect(() => currencyFromCode('KRW')).toThrow(RangeError);
    expect(() => currencyFromCode('constructor')).toThrow(RangeError);
  });

  it('behavior: isCurrency', () => {
    expect(isCurrency(44)).toBe(true);
    expect(isCurrency(74)).toBe(false);
  });
});
