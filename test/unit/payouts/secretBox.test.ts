import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { open, SecretBoxError, seal } from '../../../src/payouts/secretBox.ts';

const key = randomBytes(32);
const url = 'https://pay.example/claim/Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0';

describe('secretBox', () => {
  it('behavior: round trip, a fresh IV each time, format base64(iv).base64(tag).base64(ct)', () => {
    const a = seal(key, url);
    const b = seal(key, url);
    expect(a).not.toBe(b);
    expect(a).not.toContain('pay.example');
    const [iv, tag, ct] = a.split('.');
    expect(Buffer.from(iv ?? '', 'base64')).toHaveLength(12);
    expect(Buffer.from(tag ?? '', 'base64')).toHaveLength(16);
    expect(Buffer.from(ct ?? '', 'base64')).toHaveLength(Buffer.byteLength(url));
    expect(open(key, a)).toBe(url);
    expect(open(key, b)).toBe(url);
    expect(open(key, seal(key, ''))).toBe('');
    expect(open(key, seal(key, 'ünïcødé ✓'))).toBe('ünïcødé ✓');
  });

  it('error: a tampered ciphertext, tag or IV fails the authentication check', () => {
    const sealed = seal(key, url);
    const parts = sealed.split('.');
    for (let i = 0; i < 3; i++) {
      const bytes = Buffer.from(parts[i] ?? '', 'base64');
      bytes[0] = (bytes[0] ?? 0) ^ 1;
      const tampered = parts.map((p, j) => (j === i ? bytes.toString('base64') : p)).join('.');
      expect(() => open(key, tampered)).toThrow(SecretBoxError);
      expect(() => open(key, tampered)).toThrow(/authentication check/);
    }
  });

  it('error: the wrong key fails, and never yields the plaintext', () => {
    const sealed = seal(key, url);
    expect(() => open(randomBytes(32), sealed)).toThrow(/sealed under another ENCRYPTION_KEY/);
  });

  it('error: malformed values and keys of the wrong size', () => {
    expect(() => open(key, 'not sealed')).toThrow(/is not base64/);
    expect(() => open(key, 'AAAA.AAAA.AAAA')).toThrow(/wrong IV or tag length/);
    expect(() => seal(randomBytes(16), url)).toThrow(/must be 32 bytes/);
  });
});
