import { describe, expect, it } from 'vitest';
import {
  formatAmount,
  formatDateTime,
  formatMagnitude,
  formatPeriod,
  shortDay,
  shortHex,
} from '../../../src/recon/report/humanFormat.ts';

describe('humanFormat', () => {
  it('behavior: amounts keep every digit, with separators and at least two fraction digits', () => {
    expect(formatAmount('1250')).toBe('1,250.00');
    expect(formatAmount('5336.500000')).toBe('5,336.50');
    expect(formatAmount('21.012500')).toBe('21.0125');
    expect(formatAmount('422.000001')).toBe('422.000001');
    expect(formatAmount('-1234567.5')).toBe('-1,234,567.50');
    expect(formatAmount('-0.000000')).toBe('0.00');
    expect(formatAmount('0')).toBe('0.00');
    expect(formatAmount('100')).toBe('100.00');
    expect(formatAmount('123456789012345678901234567890.123456789012345678')).toBe(
      '123,456,789,012,345,678,901,234,567,890.123456789012345678',
    );
    expect(formatAmount('21450777', 0)).toBe('21,450,777');
    expect(formatAmount('not a number')).toBe('not a number');
    expect(formatMagnitude('-2101.250000')).toBe('2,101.25');
  });

  it('behavior: periods and times are dates in UTC, without ISO noise', () => {
    expect(formatPeriod('2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z')).toBe(
      '1–30 November 2026 (UTC)',
    );
    expect(formatPeriod('2026-11-07T00:00:00.000Z', '2026-11-08T00:00:00.000Z')).toBe(
      '7 November 2026 (UTC)',
    );
    expect(formatPeriod('2026-10-28T00:00:00.000Z', '2026-11-04T00:00:00.000Z')).toBe(
      '28 October – 3 November 2026 (UTC)',
    );
    expect(formatPeriod('2026-12-28T00:00:00.000Z', '2027-01-04T00:00:00.000Z')).toBe(
      '28 December 2026 – 3 January 2027 (UTC)',
    );
    expect(formatPeriod('2026-11-01T06:00:00.000Z', '2026-11-02T06:00:00.000Z')).toBe(
      '1 November 2026 06:00 – 2 November 2026 06:00 (UTC)',
    );
    expect(formatDateTime('2026-11-08T00:30:00.000Z')).toBe('8 Nov 2026, 00:30 UTC');
    expect(formatDateTime(null)).toBeNull();
    expect(shortDay('2026-11-03')).toBe('3 Nov');
    expect(shortHex('0xab5801a7d398351b8be11c439e05c5b3259aec9b0f1e2d3c4b5a69788796a5cd')).toBe(
      '0xab58…a5cd',
    );
    expect(shortHex('pi_1')).toBe('pi_1');
  });
});
