import { describe, expect, it } from 'vitest';
import { storableFields, storableText, toJsonb } from '../../../src/db/storableJson.ts';

describe('storableJson', () => {
  it('behavior: NUL and lone surrogates become U+FFFD; valid text, pairs included, is kept as it is', () => {
    expect(storableText('a\u0000b')).toBe('a\uFFFDb');
    expect(storableText('x\ud800')).toBe('x\uFFFD');
    expect(storableText('\udc00y')).toBe('\uFFFDy');
    const text = 'caf\u00e9 \ud83d\ude00';
    expect(storableText(text)).toBe(text);
  });

  it('behavior: toJsonb writes bigints as decimal strings and cleans strings and keys at any depth', () => {
    const json = toJsonb({ amount: 10n ** 30n, nested: [{ 'k\u0000': 'v\ud800' }], n: 1, none: null });
    expect(JSON.parse(json)).toEqual({
      amount: '1000000000000000000000000000000',
      nested: [{ 'k\uFFFD': 'v\uFFFD' }],
      n: 1,
      none: null,
    });
    expect(json).not.toMatch(/\\u0000|\\ud800/);
  });

  it('behavior: storableFields returns the same record when nothing needs cleaning, and keeps non-strings', () => {
    const clean = { a: 'x', b: 2n, c: null };
    expect(storableFields(clean)).toBe(clean);
    expect(storableFields({ a: 'x\u0000', b: 2n, c: null })).toEqual({ a: 'x\uFFFD', b: 2n, c: null });
  });
});
