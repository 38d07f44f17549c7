import { randomBytes } from 'node:crypto';

/**
 * Checkout intent ids look like the service's: MongoDB-style ObjectId strings, 24 lowercase hex
 * digits (4 bytes of creation time in Unix seconds, then 8 random bytes). The service's
 * transaction ids (all_svc_transaction_id) use the same form.
 */
export const OBJECT_ID_RE = /^[0-9a-f]{24}$/;

export function newObjectId(now: Date): string {
  const seconds = Math.floor(now.getTime() / 1000) >>> 0;
  return seconds.toString(16).padStart(8, '0') + randomBytes(8).toString('hex');
}

export function isObjectId(id: string): boolean {
  return OBJECT_ID_RE.test(id);
}
