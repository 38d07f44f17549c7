import { describe, expect, it } from 'vitest';
import { centsSchema, decimalStringSchema, requestCentsSchema } from '../../../../src/svc/models/amounts.ts';

describe('decimalStringSchema', () => {
  it.each(['0', '10', '10.50', '0.000001', '123456789012345678901234567890.5'])(
    'behavior: accepts %j',
    (s) => {
      expect(decimalStringSchema.parse(s)).toBe(s);
    },
  );

  it.each([10.5, 10, '', '-1', '+1', '1e3', ' 1', '1.', '.5', null])('error: rejects %j', (v) => {
    expect(decimalStringSchema.safeParse(v).success).toBe(false);
  });

  it('behavior: at most 78 digits, fraction included (a posting is numeric(78,0))', () => {
    expect(decimalStringSchema.parse('9'.repeat(78))).toBe('9'.repeat(78));
    expect(decimalStringSchema.parse(`${'9'.repeat(60)}.${'9'.repeat(18)}`)).toHaveLength(79);
    expect(decimalStringSchema.safeParse('9'.repeat(79)).error?.issues[0]?.message).toMatch(
      /at most 78 digits/,
    );
    expect(decimalStringSchema.safeParse(`${'9'.repeat(60)}.${'9'.repeat(19)}`).success).toBe(false);
    // PostgreSQL's numeric stops at 131,072 integer digits: such a body failed every retry.
    expect(decimalStringSchema.safeParse('1'.repeat(131_073)).success).toBe(false);
  });

  it('error: a JSON number says why', () => {
    expect(decimalStringSchema.safeParse(10.5).error?.issues[0]?.message).toMatch(/never a JSON number/);
  });
});

describe('centsSchema', () => {
  it('behavior: safe integers become bigint', () => {
    expect(centsSchema.parse(0)).toBe(0n);
    expect(centsSchema.parse(1050)).toBe(1050n);
    expect(centsSchema.parse(Number.MAX_SAFE_INTEGER)).toBe(9_007_199_254_740_991n);
  });

  it('error: beyond 2^53 - 1 the JSON number is no longer exact', () => {
    expect(centsSchema.safeParse(2 ** 53).success).toBe(false);
    // JSON.parse already rounded this one: refusing is the only exact answer.
    const parsed = JSON.parse('{"amount_cents": 9007199254740993}') as { amount_cents: number };
    expect(centsSchema.safeParse(parsed.amount_cents).success).toBe(false);
  });

  it.each([-1, 10.5, Number.NaN, Number.POSITIVE_INFINITY, '1050', 1050n, null])('error: rejects %s', (v) => {
    expect(centsSchema.safeParse(v).success).toBe(false);
  });
});

describe('requestCentsSchema', () => {
  it('behavior: positive bigint up to 2^53 - 1', () => {
    expect(requestCentsSchema.parse(1n)).toBe(1n);
    expect(requestCentsSchema.parse(BigInt(Number.MAX_SAFE_INTEGER))).toBe(9_007_199_254_740_991n);
  });

  it.each([0n, -1n, 2n ** 53n, 1050, '1050'])('error: rejects %s', (v) => {
    expect(requestCentsSchema.safeParse(v).success).toBe(false);
  });
});
