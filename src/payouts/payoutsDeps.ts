import type { PaymentsDeps } from '../payments/paymentsDeps.ts';
import type { RetrySettings } from '../svc/retryPolicy.ts';

/**
 * What the payouts domain needs: the payments dependencies (database, chain registry, account
 * cache, the signed client per store, clock, logger) plus the key that seals claim URLs and tokens.
 *
 * createPayout owns the retries of claim-link create (same reference_id, recorded per attempt):
 * give it clients that do not retry create themselves (`retry: { maxAttempts: 1 }`), or the two
 * loops multiply (still bounded).
 */
export interface PayoutsDeps extends PaymentsDeps {
  /** ENCRYPTION_KEY, 32 bytes: seals claim URLs and tokens at rest (payouts/secretBox.ts). */
  encryptionKey: Buffer;
  /** Attempts and backoff of create with the same reference_id; defaults in createPayout.ts. */
  createRetry?: Partial<RetrySettings>;
  /** Injected in tests to skip real waits between attempts. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** What the scheduled checks need (jobs/claimLinks.ts). */
export type ClaimLinkJobDeps = Pick<PaymentsDeps, 'db' | 'chains' | 'accounts' | 'logger'> & {
  /** REFUND_GRACE_HOURS: how long a cancelled or expired link may wait for its refund. */
  refundGraceMs: number;
};
