import { describe, expect, it } from 'vitest';
import { encodeCursor } from '../../../src/api/cursor.ts';
import { parseInput } from '../../../src/api/input.ts';
import {
  balancesQuery,
  entriesQuery,
  findingsQuery,
  idParams,
  intentsQuery,
} from '../../../src/api/schemas.ts';

const reason = (r: { ok: boolean; reason?: string }) => (r.ok ? 'ok' : r.reason);

describe('read API: params and queries', () => {
  it('behavior: valid queries become typed values, with their defaults', () => {
    expect(parseInput(findingsQuery, {})).toEqual({ ok: true, value: { status: 'open' } });
    const cursor = encodeCursor('findings', 12n);
    expect(
      parseInput(findingsQuery, {
        status: 'all',
        kind: 'missing_webhook',
        severity: 'critical',
        store: 'st_a',
        limit: '500',
        cursor,
      }),
    ).toEqual({
      ok: true,
      value: {
        status: 'all',
        kind: 'missing_webhook',
        severity: 'critical',
        store: 'st_a',
        limit: 500,
        cursor: 12n,
      },
    });
    expect(
      parseInput(entriesQuery, { from: '2025-01-01T00:00:00Z', to: '2025-02-01T01:00:00+01:00' }),
    ).toEqual({
      ok: true,
      value: { from: new Date('2025-01-01T00:00:00Z'), to: new Date('2025-02-01T00:00:00Z') },
    });
    expect(parseInput(balancesQuery, { at: '2025-01-01T12:00:00.123Z' })).toEqual({
      ok: true,
      value: { at: new Date('2025-01-01T12:00:00.123Z') },
    });
    expect(parseInput(intentsQuery, { order_id: 'o-77' })).toEqual({ ok: true, value: { order_id: 'o-77' } });
    expect(parseInput(idParams, { id: 'po_abc' })).toEqual({ ok: true, value: { id: 'po_abc' } });
  });

  it('error: a bad value is a reason that names the parameter first', () => {
    expect(reason(parseInput(findingsQuery, { limit: '0' }))).toBe(
      'limit: must be a whole number from 1 to 500',
    );
    expect(reason(parseInput(findingsQuery, { limit: '501' }))).toBe(
      'limit: must be a whole number from 1 to 500',
    );
    expect(reason(parseInput(findingsQuery, { limit: '1e2' }))).toBe(
      'limit: must be a whole number from 1 to 500',
    );
    expect(reason(parseInput(findingsQuery, { limit: ' 5' }))).toBe(
      'limit: must be a whole number from 1 to 500',
    );
    expect(reason(parseInput(findingsQuery, { status: 'closed' }))).toBe(
      'status: must be open, resolved or all',
    );
    expect(reason(parseInput(findingsQuery, { severity: 'high' }))).toBe(
      'severity: must be info, warning or critical',
    );
    expect(reason(parseInput(findingsQuery, { kind: 'Missing' }))).toMatch(/^kind: must be a finding kind/);
    expect(reason(parseInput(findingsQuery, { cursor: '42' }))).toBe(
      'cursor: is not a cursor this list gave (next_cursor)',
    );
    // A cursor of the other list is refused: its id means nothing here.
    expect(reason(parseInput(findingsQuery, { cursor: encodeCursor('entries', 5n) }))).toMatch(/^cursor: /);
    expect(reason(parseInput(entriesQuery, { from: 'yesterday' }))).toMatch(
      /^from: must be an ISO 8601 time/,
    );
    expect(reason(parseInput(entriesQuery, { to: '2025-01-01' }))).toMatch(/^to: must be an ISO 8601 time/);
    expect(
      reason(parseInput(entriesQuery, { from: '2025-01-02T00:00:00Z', to: '2025-01-01T00:00:00Z' })),
    ).toBe('to: must be after from');
    expect(reason(parseInput(balancesQuery, { at: '2025-13-01T00:00:00Z' }))).toMatch(/^at: /);
    expect(reason(parseInput(intentsQuery, {}))).toBe(
      'order_id: is required: the order id the intents were created with',
    );
    expect(reason(parseInput(intentsQuery, { order_id: '' }))).toBe('order_id: must not be empty');
    expect(reason(parseInput(idParams, { id: 'a b' }))).toBe('id: must be 1 to 128 printable characters');
  });

  it('error: an unknown parameter or one given twice is refused, never ignored', () => {
    expect(reason(parseInput(entriesQuery, { stor: 'st_a' }))).toBe('stor: unknown parameter');
    expect(reason(parseInput(entriesQuery, { a: '1', b: '2' }))).toBe('a, b: unknown parameters');
    expect(reason(parseInput(entriesQuery, { limit: ['1', '2'] }))).toBe('limit: given more than once');
  });

  it('error: what PostgreSQL would refuse is refused first: NUL, years outside 0001-9999, offsets no zone has', () => {
    expect(reason(parseInput(intentsQuery, { order_id: 'a\u0000b' }))).toBe(
      'order_id: must not hold a NUL character',
    );
    // Any parameter, even one no schema knows yet.
    expect(reason(parseInput(entriesQuery, { store: ['st_a', '\u0000'] }))).toBe(
      'store: must not hold a NUL character',
    );
    const outside = 'must be between 0001-01-01 and 9999-12-31 (UTC)';
    expect(reason(parseInput(balancesQuery, { at: '0000-01-01T00:00:00Z' }))).toBe(`at: ${outside}`);
    expect(reason(parseInput(balancesQuery, { at: '0001-01-01T00:00:00+00:01' }))).toBe(`at: ${outside}`);
    expect(reason(parseInput(balancesQuery, { at: '9999-12-31T23:59:59-00:01' }))).toBe(`at: ${outside}`);
    expect(reason(parseInput(entriesQuery, { from: '2025-01-01T00:00:00-23:59' }))).toBe(
      'from: its offset must be Z or from -14:00 to +14:00',
    );
    expect(reason(parseInput(entriesQuery, { from: '2025-01-01T00:00:00+14:01' }))).toMatch(
      /^from: its offset/,
    );
    for (const at of ['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '2025-06-01T12:00:00+14:00'])
      expect(parseInput(balancesQuery, { at }).ok, at).toBe(true);
  });
});
