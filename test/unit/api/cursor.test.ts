import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../../../src/api/cursor.ts';

describe('read API cursor', () => {
  it('behavior: a cursor gives back the id it was made from, for its own list only', () => {
    for (const id of [1n, 42n, 9_007_199_254_740_993n, 9_223_372_036_854_775_807n]) {
      const cursor = encodeCursor('entries', id);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor('entries', cursor)).toBe(id);
      expect(decodeCursor('findings', cursor)).toBeUndefined();
    }
    expect(decodeCursor('findings', encodeCursor('findings', 7n))).toBe(7n);
  });

  it('behavior: the cursor is opaque: the raw id, tampered or foreign text is no cursor', () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64url');
    for (const bad of [
      '',
      '42',
      'not a cursor!',
      b64('v1:entries:0'),
      b64('v1:entries:-1'),
      b64('v1:entries:01'),
      b64('v1:entries:1.5'),
      b64('v2:entries:1'),
      b64('v1:payouts:1'),
      b64('v1:entries:9223372036854775808'),
      b64('v1:entries:1 '),
      'x'.repeat(201),
    ])
      expect(decodeCursor('entries', bad), bad).toBeUndefined();
  });
});
