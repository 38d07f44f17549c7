import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  pgTable,
  text,
  timestamp,
  unique,
} from 'drizzle-orm/pg-core';

/**
 * Claim-link payouts (docs/accounting.md, "Payments, payouts and the chain"). A row is written before the create call, keyed by
 * (store, reference_id), so a crash or a timeout is resumed by retrying with the same reference_id
 * and can never pay twice. The claim URL and token are secrets: stored only encrypted
 * (AES-256-GCM, ENCRYPTION_KEY), as `base64(iv).base64(tag).base64(ciphertext)`.
 *
 * - create_outcome: pending (written, call not answered yet), created, failed (the service said
 *   no: nothing was paid), unknown (the call may have reached the service: retry with the same
 *   reference_id to learn the outcome);
 * - link_status: the service's claim-link status as we last learnt it (pending_deposit,
 *   link_sent, claiming, claimed, expired, cancelled); claimed_at is the chain's claim (rule 6),
 *   claimed_reported_at the service's word that it was claimed;
 * - amounts are decimal strings as sent to and returned by the service.
 */
export const payouts = pgTable(
  'payouts',
  {
    id: text('id').primaryKey(),
    storeId: text('store_id').notNull(),
    referenceId: text('reference_id').notNull(),
    amount: text('amount').notNull(),
    /** StableCoin enum: 1 USDT, 2 USDC. */
    coin: integer('coin').notNull(),
    /** EIP-155 chain id (the service's Chain enum only at the API call). */
    chainId: bigint('chain_id', { mode: 'number' }).notNull(),
    tokenAddress: text('token_address').notNull(),
    receiverEmail: text('receiver_email'),
    senderName: text('sender_name'),
    senderMessage: text('sender_message'),
    createOutcome: text('create_outcome', { enum: ['pending', 'created', 'failed', 'unknown'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    idempotentHit: boolean('idempotent_hit').notNull().default(false),
    claimLinkId: text('claim_link_id').unique(),
    linkStatus: text('link_status'),
    claimUrlEnc: text('claim_url_enc'),
    claimTokenEnc: text('claim_token_enc'),
    fundingTxHash: text('funding_tx_hash'),
    fundedAmount: text('funded_amount'),
    poolAddress: text('pool_address'),
    fundedAt: timestamp('funded_at', { withTimezone: true }),
    /** Set by the chain side only (rule 6 booked): the claim as the chain proves it. */
    claimedAt: timestamp('claimed_at', { withTimezone: true }),
    /**
     * When the service first told us the link is claimed (a cancel answered 50108 "claimed", or a
     * create replay): what it said, kept apart from claimed_at, which only the chain sets.
     */
    claimedReportedAt: timestamp('claimed_reported_at', { withTimezone: true }),
    cancelledAt: timestamp('cancelled_at', { withTimezone: true }),
    expiredAt: timestamp('expired_at', { withTimezone: true }),
    refundTxHash: text('refund_tx_hash'),
    refundedAt: timestamp('refunded_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique('payouts_reference').on(t.storeId, t.referenceId),
    index('payouts_open_idx')
      .on(t.linkStatus)
      .where(sql`claimed_at is null and cancelled_at is null and expired_at is null`),
    check('payouts_coin', sql`${t.coin} in (1, 2)`),
  ],
);
