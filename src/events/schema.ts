import { sql } from 'drizzle-orm';
import { bigserial, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * The outbox of outbound events (src/events): one row per event, written in the transaction of the
 * booking that causes it, delivered later by the `events.deliver` job (at least once, each
 * delivery under the same event_id). event_id derives from the cause (`payment.booked:<intent>`,
 * `finding.opened:<finding id>`), so a retried booking writes no second row.
 * - payload: the event's `data` as sent; occurred_at: when the booked thing happened;
 * - attempts, next_attempt_at, last_error: delivery so far; delivered_at: a 2xx answer;
 * - given_up_at: no 2xx within the delivery window (kept, never sent again, pruned with the rest).
 * The findings events are written by triggers on `findings` (migrations/0014_event_outbox.sql).
 */
export const eventOutbox = pgTable(
  'event_outbox',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    eventId: text('event_id').notNull().unique(),
    type: text('type').notNull(),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
    recordedAt: timestamp('recorded_at', { withTimezone: true }).notNull().defaultNow(),
    payload: jsonb('payload').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    deliveredAt: timestamp('delivered_at', { withTimezone: true }),
    givenUpAt: timestamp('given_up_at', { withTimezone: true }),
    lastError: text('last_error'),
  },
  (t) => [
    index('event_outbox_due_idx')
      .on(t.nextAttemptAt, t.id)
      .where(sql`delivered_at is null and given_up_at is null`),
    index('event_outbox_recorded_idx').on(t.recordedAt),
  ],
);
