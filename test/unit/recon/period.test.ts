import { describe, expect, it } from 'vitest';
import { PeriodError, parsePeriod, previousUtcDay } from '../../../src/recon/period.ts';

describe('reconciliation period', () => {
  const now = new Date('2026-11-22T00:15:03Z');

  it('behavior: the default is the previous UTC day, whatever the time of day', () => {
    expect(previousUtcDay(now)).toEqual({
      from: new Date('2026-11-21T00:00:00Z'),
      to: new Date('2026-11-22T00:00:00Z'),
    });
    expect(previousUtcDay(new Date('2026-11-22T23:59:59.999Z')).from.toISOString()).toBe(
      '2026-11-21T00:00:00.000Z',
    );
    expect(parsePeriod(undefined, undefined, now)).toEqual(previousUtcDay(now));
  });

  it('behavior: a date is its UTC midnight; a missing end is one day from the other', () => {
    expect(parsePeriod('2026-10-01', undefined, now)).toEqual({
      from: new Date('2026-10-01T00:00:00Z'),
      to: new Date('2026-10-02T00:00:00Z'),
    });
    expect(parsePeriod(undefined, '2026-10-01T12:00:00+02:00', now)).toEqual({
      from: new Date('2026-09-30T10:00:00Z'),
      to: new Date('2026-10-01T10:00:00Z'),
    });
    expect(parsePeriod('2026-10-01', '2026-11-01', now).to).toEqual(new Date('2026-11-01T00:00:00Z'));
  });

  it('behavior: bad or ambiguous input is refused with the flag named', () => {
    expect(() => parsePeriod('yesterday', undefined, now)).toThrow(PeriodError);
    expect(() => parsePeriod('2026-10-01T12:00:00', undefined, now)).toThrow(/--from: .* with a zone/);
    expect(() => parsePeriod('2026-02-30', undefined, now)).toThrow(/--from: 2026-02-30 is not a date/);
    expect(() => parsePeriod(undefined, '2026-13-01T00:00:00Z', now)).toThrow(/--to: /);
    expect(() => parsePeriod('2026-10-02', '2026-10-01', now)).toThrow(/--from must be before --to/);
    expect(() => parsePeriod('2024-01-01', '2026-01-01', now)).toThrow(/at most 366 days/);
  });
});
