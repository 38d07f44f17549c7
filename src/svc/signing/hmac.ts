import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The service's signature value, scheme v1: `v1=` followed by Base64(HMAC-SHA256(api_secret,
 * canonical string)). Requests, responses and webhooks all use it; only the canonical string differs.
 */
export function hmacSignatureV1(secret: string | Uint8Array, canonical: string): string {
  const mac = createHmac('sha256', secret).update(canonical, 'utf8').digest('base64');
  return `v1=${mac}`;
}

/**
 * Timing-safe equality of two signature strings. Both sides are first reduced to SHA-256 digests,
 * so the comparison always runs over 32 bytes: it neither throws nor returns early when the lengths
 * differ, and so leaks neither the expected length nor a matching prefix.
 */
export function signaturesEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}
