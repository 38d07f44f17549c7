import { createHash } from 'node:crypto';

/**
 * Lowercase hex SHA-256 of raw bytes. Every BODY_SHA256 line of the service's canonical strings is
 * this value, taken over the exact bytes that travelled (never a re-serialised body). A string is
 * hashed as its UTF-8 encoding; pass the raw bytes (a Buffer is a Uint8Array) whenever you have them.
 */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256')
    .update(typeof data === 'string' ? Buffer.from(data, 'utf8') : data)
    .digest('hex');
}
