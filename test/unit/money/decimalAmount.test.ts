import { describe, expect, it } from 'vitest';
import {
  AmountFormatError,
  DECIMAL_STRING_RE,
  formatDecimalAmount,
  parseDecimalAmount,
} from '../../../src/money/decimalAmount.ts';

describe('parseDecimalAmount', () => {
  it('behavior: 6 decimals', () => {
    expect(parseDecimalAmount('1', 6)).toBe(1_000_000n);
    expect(parseDecimalAmount('12.5', 6)).toBe(12_500_000n);
    expect(parseDecimalAmount('0.000001', 6)).toBe(1n);
    expect(parseDecimalAmount('0', 6)).toBe(0n);
    expect(parseDecimalAmount('007.10', 6)).toBe(7_100_000n);
  });

  it('behavior: 18 decimals', () => {
    expect(parseDecimalAmount('1', 18)).toBe(10n ** 18n);
    expect(parseDecimalAmount('0.000000000000000001', 18)).toBe(1n);
    expect(parseDecimalAmount('123.456789012345678901', 18)).toBe(123_456789012345678901n);
    expect(parseDecimalAmount('123.456789012345678901', 21)).toBe(123_456789012345678901_000n);
  });

  it('behavior: 0 decimals', () => {
    expect(parseDecimalAmount('42', 0)).toBe(42n);
    expect(parseDecimalAmount('42.0', 0)).toBe(42n);
    expect(() => parseDecimalAmount('42.1', 0)).toThrow(AmountFormatError);
  });

  it('behavior: values beyond 2^53 stay exact', () => {
    expect(parseDecimalAmount('9007199254740993', 6)).toBe(9_007_199_254_740_993_000_000n);
    expect(parseDecimalAmount('9007199.254740993', 9)).toBe(9_007_199_254_740_993n);
    const uint256Max = 2n ** 256n - 1n;
    expect(parseDecimalAmount(formatDecimalAmount(uint256Max, 18), 18)).toBe(uint256Max);
  });

  it("behavior: zeros beyond the token's decimals are exact, so they are read, not refused", () => {
    // Before: "10.500000000" for a 6-decimal token was an AmountFormatError, though it is exactly 10.5.
    expect(parseDecimalAmount('10.500000000', 6)).toBe(10_500_000n);
    expect(parseDecimalAmount('1.0000000', 6)).toBe(1_000_000n);
    expect(parseDecimalAmount('0.000001000', 6)).toBe(1n);
    expect(parseDecimalAmount('25.000000000000000000000', 18)).toBe(25n * 10n ** 18n);
    expect(parseDecimalAmount('42.000', 0)).toBe(42n);
    expect(parseDecimalAmount('0.00000000', 6)).toBe(0n);
  });

  it('error: more precision than the token has, never rounded', () => {
    expect(() => parseDecimalAmount('1.0000001', 6)).toThrow(
      'amount "1.0000001" has more precision than the token\'s 6 decimals',
    );
    expect(() => parseDecimalAmount('10.5000001', 6)).toThrow(AmountFormatError);
    // A non-zero digit anywhere beyond the decimals is precision, however many zeros follow it.
    expect(() => parseDecimalAmount('10.50000010', 6)).toThrow(AmountFormatError);
    expect(() => parseDecimalAmount('1.00000000000000000010', 18)).toThrow(/18 decimals/);
    expect(() => parseDecimalAmount('0.0000000000000000001', 18)).toThrow(/18 decimals/);
    expect(() => parseDecimalAmount('42.5', 0)).toThrow(AmountFormatError);
  });

  it.each([
    '',
    ' ',
    '1 ',
    ' 1',
    '1\n',
    '-1',
    '+1',
    '1e6',
    '1E6',
    '.5',
    '5.',
    '.',
    '1.2.3',
    '1,5',
    '0x10',
    'NaN',
    'Infinity',
    '١',
  ])('error: malformed %j', (text) => {
    expect(() => parseDecimalAmount(text, 6)).toThrow(AmountFormatError);
  });

  it('error: carries the text and decimals', () => {
    try {
      parseDecimalAmount('-1', 6);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(AmountFormatError);
      expect(e).toMatchObject({ name: 'AmountFormatError', text: '-1', decimals: 6 });
    }
  });

  it('error: bad decimals argument', () => {
    expect(() => parseDecimalAmount('1', -1)).toThrow(RangeError);
    expect(() => parseDecimalAmount('1', 1.5)).toThrow(RangeError);
    expect(() => formatDecimalAmount(1n, 256)).toThrow(RangeError);
  });
});

describe('formatDecimalAmount', () => {
  it('behavior: canonical form', () => {
    expect(formatDecimalAmount(0n, 6)).toBe('0');
    expect(formatDecimalAmount(1n, 6)).toBe('0.000001');
    expect(formatDecimalAmount(1_000_000n, 6)).toBe('1');
    expect(formatDecimalAmount(12_500_000n, 6)).toBe('12.5');
    expect(formatDecimalAmount(10n ** 18n + 1n, 18)).toBe('1.000000000000000001');
    expect(formatDecimalAmount(42n, 0)).toBe('42');
  });

  it('behavior: negative amounts', () => {
    expect(formatDecimalAmount(-1n, 6)).toBe('-0.000001');
    expect(formatDecimalAmount(-12_500_000n, 6)).toBe('-12.5');
    expect(formatDecimalAmount(-(10n ** 18n), 18)).toBe('-1');
  });

  it('behavior: beyond 2^53', () => {
    expect(formatDecimalAmount(9_007_199_254_740_993n, 6)).toBe('9007199254.740993');
  });
});

describe('round-trip', () => {
  it.each([
    ['0', 6],
    ['1', 6],
    ['0.000001', 6],
    ['123456789.123456', 6],
    ['9007199254740993.5', 6],
    ['0.000000000000000001', 18],
    ['1.5', 18],
    ['115792089237316195423570985008687907853269984665640564039457.584007913129639935', 18],
  ] as const)('behavior: %s with %i decimals', (text, decimals) => {
    const units = parseDecimalAmount(text, decimals);
    expect(formatDecimalAmount(units, decimals)).toBe(text);
    expect(parseDecimalAmount(formatDecimalAmount(units, decimals), decimals)).toBe(units);
  });

  it('behavior: non-canonical input formats to canonical', () => {
    expect(formatDecimalAmount(parseDecimalAmount('0010.500000', 6), 6)).toBe('10.5');
  });
});

describe('DECIMAL_STRING_RE', () => {
  it('behavior: accepts plain decimals only', () => {
    expect(DECIMAL_STRING_RE.test('10.50')).toBe(true);
    expect(DECIMAL_STRING_RE.test('10')).toBe(true);
    expect(DECIMAL_STRING_RE.test('-10')).toBe(false);
    expect(DECIMAL_STRING_RE.test('1e3')).toBe(false);
  });
});
