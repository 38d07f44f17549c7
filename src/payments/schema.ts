import { sql } from 'drizzle-orm';
import { bigint, bigserial, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Checkout intents as the service reports them: every field of the spec (amounts as the decimal
 * strings sent), the raw last API payload, and the tracking state of the poller.
 */
export const checkoutIntents = pgTable(
  'checkout_intents',
  {
    id: text('id').primaryKey(),
    storeId: text('store_id').notNull(),
    currency: integer('currency'),
    currencySymbol: text('currency_symbol'),
    amountCents: bigint('amount_cents', { mode: 'bigint' }),
    chainId: bigint('chain_id', { mode: 'number' }),
    amountCoins: text('amount_coins'),
    coinSymbol: text('coin_symbol'),
    coinContract: text('coin_contract'),
    currencyRate: text('currency_rate'),
    /** null until the first fetch of an intent first seen in a webhook. */
    status: integer('status'),
    orderId: text('order_id'),
    orderDescription: text('order_description'),
    userId: text('user_id'),
    userName: text('user_name'),
    errorMessage: text('error_message'),
    txHash: text('tx_hash'),
    txHash2: text('tx_hash_2'),
    txFrom: text('tx_from'),
    txTo: text('tx_to'),
    actualPaidAmount: text('actual_paid_amount'),
    serviceFeeAmount: text('service_fee_amount'),
    netIncomeAmount: text('net_income_amount'),
    paymentMethodType: integer('payment_method_type'),
    acceptedStableCoins: integer('accepted_stable_coins'),
    rawPayload: jsonb('raw_payload'),
    /** How it entered tracking: created, track, webhook. */
    trackedVia: text('tracked_via').notNull(),
    trackedAt: timestamp('tracked_at', { withTimezone: true }).notNull().defaultNow(),
    statusChangedAt: timestamp('status_changed_at', { withTimezone: true }),
    /** First time we saw CONFIRMED: the occurred_at of its ledger entry, fixed once. */
    confirmedAt: timestamp('confirmed_at', { withTimezone: true }),
    /** webhook or poll: what brought the terminal status (polling stops either way). */
    settledBy: text('settled_by'),
    lastPolledAt: timestamp('last_polled_at', { withTimezone: true }),
    pollCount: integer('poll_count').notNull().default(0),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('checkout_intents_store_idx').on(t.storeId),
    index('checkout_intents_status_idx').on(t.status),
    // The chain side finds the intent a transfer pays by its hash.
    index('checkout_intents_tx_hash_idx').on(sql`lower(${t.txHash})`),
    index('checkout_intents_tx_hash_2_idx').on(sql`lower(${t.txHash2})`),
    // Also, in custom SQL (migration 0013): checkout_intents_sent_back_paid_idx on chain_id over
    // the intents sent back or failed that name a payment (rematchPaymentReturns).
  ],
);

/** Every status change of an intent, whoever saw it first. Append-only. */
export const checkoutIntentStatusHistory = pgTable(
  'checkout_intent_status_history',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    intentId: text('intent_id').notNull(),
    fromStatus: integer('from_status'),
    toStatus: integer('to_status').notNull(),
    /** webhook, poll, create, track */
    source: text('source').notNull(),
    observedAt: timestamp('observed_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('checkout_intent_status_history_intent_idx').on(t.intentId)],
);

/**
 * Each create-checkout-intent call we made, written before the call: an outcome left `pending`
 * or `unknown` (the request may have reached the service) is a person's to resolve, never a
 * blind retry.
 */
export const checkoutIntentCreations = pgTable('checkout_intent_creations', {
  id: bigserial('id', { mode: 'bigint' }).primaryKey(),
  storeId: text('store_id').notNull(),
  orderId: text('order_id'),
  request: jsonb('request').notNull(),
  outcome: text('outcome', { enum: ['pending', 'created', 'failed', 'unknown'] }).notNull(),
  intentId: text('intent_id'),
  error: text('error'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});
