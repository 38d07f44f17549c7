import { describe, expect, test } from 'vitest';
import { hmacSignatureV1, signaturesEqual } from '../../../../src/svc/signing/hmac.ts';

describe('hmacSignatureV1', () => {
  test('vector: v1= prefix and Base64 HMAC-SHA256', () => {
    // printf 'hello\nworld' | openssl dgst -sha256 -hmac 'sk_test_3c9d' -binary | base64
    expect(hmacSignatureV1('sk_test_3c9d', 'hello\nworld')).toBe(
      'v1=Qa6DwXxZkqk9CqB55ozMtTpkU8u3uo/ZG3phh+rRNr4=',
    );
  });

  test('behavior: a secret given as bytes signs like its UTF-8 string', () => {
    expect(hmacSignatureV1(Buffer.from('sk_test_3c9d'), 'hello\nworld')).toBe(
      hmacSignatureV1('sk_test_3c9d', 'hello\nworld'),
    );
  });
});

describe('signaturesEqual', () => {
  test('behavior: equal signatures compare equal', () => {
    expect(signaturesEqual('v1=abc', 'v1=abc')).toBe(true);
  });

  test('error: different signatures of the same length', () => {
    expect(signaturesEqual('v1=abc', 'v1=abd')).toBe(false);
  });

  test('error: different lengths compare unequal without throwing', () => {
    expect(signaturesEqual('v1=abc', 'v1=abc=')).toBe(false);
    expect(signaturesEqual('', 'v1=abc')).toBe(false);
  });

  test('error: a non-ASCII character is compared by its bytes, never throwing', () => {
    // Same number of characters, different number of bytes: comparing buffers of unequal
    // length would throw in timingSafeEqual.
    expect(signaturesEqual('v1=abé', 'v1=abc')).toBe(false);
    // Same number of bytes, different content.
    expect(signaturesEqual('v1=abé', 'v1=abcd')).toBe(false);
  });
});
