import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The service's signature value, scheme v1: `v1=` followed by Base64(HMAC-SHA256(api_secret,
 * canonical string)). Requests, responses and webhooks all use it; only the canonical string differs.
 */
export function hmacSignatureV1(secret: string | Uint8Array, canonical: string): string {
  const mac = createHmac('sha256', secret).update(canonical, 'utf8').digest('base64');
  return `v1=${mac}`;
}

/**
 * Timing-safe equality of a received signature with the one we computed. The expected value's
 * length is public (always `v1=` and 44 Base64 characters), so a received value of another length
 * is refused at once without leaking anything; values of equal length are compared in constant
 * time, which hides how long a prefix matched. (Hashing both sides first cost 3-4% of the
 * intake's CPU under load and hid nothing more.)
 */
export function signaturesEqual(received: string, expected: string): boolean {
  const a = Buffer.from(received, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}
