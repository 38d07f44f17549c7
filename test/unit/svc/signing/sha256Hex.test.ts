import { describe, expect, test } from 'vitest';
import { sha256Hex } from '../../../../src/svc/signing/sha256Hex.ts';

describe('sha256Hex', () => {
  test('vector: empty body', () => {
    // printf '' | openssl dgst -sha256
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex(new Uint8Array())).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
  });

  test('vector: a string is hashed as its UTF-8 bytes', () => {
    // printf '%s' 'café' | openssl dgst -sha256      (bytes 63 61 66 c3 a9)
    const expected = '850f7dc43910ff890f8879c0ed26fe697c93a067ad93a7d50f466a7028a9bf4e';
    expect(sha256Hex('café')).toBe(expected);
    expect(sha256Hex(Uint8Array.from([0x63, 0x61, 0x66, 0xc3, 0xa9]))).toBe(expected);
    expect(sha256Hex(Buffer.from('café', 'utf8'))).toBe(expected);
  });

  test('vector: raw JSON bytes with odd spacing and a unicode escape', () => {
    // printf '%s' '{"b":1,  "a":"caf\u00e9"}' | openssl dgst -sha256
    expect(sha256Hex('{"b":1,  "a":"caf\\u00e9"}')).toBe(
      '146052eec397cc00d1cf4dbab5f533814e36eb7f9f1ff32ae525c81590ab7579',
    );
  });
});
