import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { StablebooksError } from '../errors/stablebooksError.ts';

/**
 * The claim URL and claim token of a payout are bearer secrets (docs/accounting.md, "Payments, payouts and the chain"): they are
 * stored only sealed with AES-256-GCM under ENCRYPTION_KEY, as `base64(iv).base64(tag).base64(ct)`
 * with a fresh random 12-byte IV per value. Opening checks the tag, so a tampered value or a wrong
 * key is an error, never garbage.
 */

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** Opening failed: the value was altered, is not a sealed value, or was sealed under another key. */
export class SecretBoxError extends StablebooksError {
  override name = 'SecretBoxError';
  readonly retryable = false;
}

function checkKey(key: Buffer): void {
  if (key.length !== KEY_BYTES) {
    throw new SecretBoxError(`encryption key must be ${KEY_BYTES} bytes, got ${key.length} (ENCRYPTION_KEY)`);
  }
}

export function seal(key: Buffer, plaintext: string): string {
  checkKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), ct].map((b) => b.toString('base64')).join('.');
}

const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function open(key: Buffer, sealed: string): string {
  checkKey(key);
  const parts = sealed.split('.');
  if (parts.length !== 3 || !parts.every((p) => B64.test(p))) {
    throw new SecretBoxError('sealed value is not base64(iv).base64(tag).base64(ciphertext)');
  }
  const [iv, tag, ct] = parts.map((p) => Buffer.from(p, 'base64')) as [Buffer, Buffer, Buffer];
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
    throw new SecretBoxError('sealed value has a wrong IV or tag length');
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ct), decipher.final()]).toString('utf8');
  } catch (err) {
    throw new SecretBoxError(
      'sealed value failed its authentication check: it was altered or sealed under another ENCRYPTION_KEY',
      { cause: err },
    );
  }
}
