import { describe, expect, it } from 'vitest';
import { stringifyJson } from '../../../src/svc/json.ts';

describe('stringifyJson', () => {
  it('behavior: bigint becomes a bare JSON integer', () => {
    expect(stringifyJson({ amount_cents: 1050n })).toBe('{"amount_cents":1050}');
    expect(stringifyJson(-5n)).toBe('-5');
    expect(stringifyJson([0n, 1n])).toBe('[0,1]');
  });

  it('behavior: bigint beyond 2^53 keeps every digit', () => {
    const body = stringifyJson({ amount_cents: 2n ** 64n + 1n });
    expect(body).toBe('{"amount_cents":18446744073709551617}');
  });

  it('behavior: same output as JSON.stringify when there is no bigint', () => {
    const value = {
      currency: 1,
      stable_coin: null,
      order_id: 'ord-1 "quoted" \u2028',
      skipped: undefined,
      extra: { nested: [1, 'two', true, null], at: new Date(0) },
    };
    expect(stringifyJson(value)).toBe(JSON.stringify(value));
  });

  it('behavior: strings that look like bigints are left alone', () => {
    const value = { a: 'bigint_00000000000000000000000000000000_12', b: '12', c: 12n };
    expect(JSON.parse(stringifyJson(value))).toEqual({
      a: 'bigint_00000000000000000000000000000000_12',
      b: '12',
      c: 12,
    });
  });

  it('behavior: bigint nested in arrays and objects, as keys stay strings', () => {
    expect(stringifyJson({ x: [{ y: 3n }], '4': 4n })).toBe('{"4":4,"x":[{"y":3}]}');
  });

  it('error: no JSON form', () => {
    expect(() => stringifyJson(undefined)).toThrow(TypeError);
    expect(() => stringifyJson(() => 1)).toThrow(TypeError);
  });

  it('error: cycles still throw', () => {
    const a: Record<string, unknown> = {};
    a.self = a;
    expect(() => stringifyJson(a)).toThrow(TypeError);
  });
});
