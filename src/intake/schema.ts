import { sql } from 'drizzle-orm';
import { customType, index, integer, jsonb, numeric, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

/**
 * Every webhook that passed signature verification, stored before it is answered 200: the exact
 * bytes, the headers and the receipt time, keyed by webhook_id (the sender's retries repeat it).
 */
export const webhookInbox = pgTable(
  'webhook_inbox',
  {
    webhookId: text('webhook_id').primaryKey(),
    storeId: text('store_id').notNull(),
    /** Which route received it: `checkout` or `claim-links`. */
    endpoint: text('endpoint').notNull(),
    /** received -> processed | failed; rejected: valid signature but not JSON (kept for audit). */
    status: text('status', { enum: ['received', 'rejected', 'processed', 'failed'] }).notNull(),
    headers: jsonb('headers').notNull(),
    body: bytea('body').notNull(),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
    processedAt: timestamp('processed_at', { withTimezone: true }),
    attempts: integer('attempts').notNull().default(0),
    error: text('error'),
    /** What it is about, set when processed: the checkout intent id (reconciliation matches by it). */
    refId: text('ref_id'),
    /**
     * A processed checkout webhook's actual_paid_amount as sent (exact, its scale kept), set when
     * processed with ref_id: reconciliation compares it without parsing every body.
     */
    actualPaidAmount: numeric('actual_paid_amount'),
  },
  // The sweeper's scan: rows still waiting for their job (it re-adds jobs; job ids dedupe).
  (t) => [
    index('webhook_inbox_waiting_idx').on(t.receivedAt).where(sql`status = 'received'`),
    index('webhook_inbox_ref_idx').on(t.refId),
    // Reconciliation's matching reads only these two columns of processed checkout webhooks:
    // an index-only scan instead of reading every stored body.
    index('webhook_inbox_checkout_paid_idx')
      .on(t.refId, t.actualPaidAmount)
      .where(sql`endpoint = 'checkout' and status = 'processed'`),
  ],
);

/** Webhook nonces already used; kept past their TTL only until the sweeper deletes them. */
export const webhookNonces = pgTable('webhook_nonces', {
  nonce: text('nonce').primaryKey(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
});
