import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * The state of each alert condition (src/alerts/conditions.ts), one row per condition key, so that
 * alerts are edge-triggered across runs and processes:
 * - status: firing while the condition holds, resolved once it cleared;
 * - pending: the message owed to the notifiers (firing, reminder, resolved), null when none; it
 *   stays until every routed notifier took it, so a notifier that is down gets it on a later run;
 * - pending_sent_to: the notifiers that already took the pending message (never sent twice);
 * - title, text, labels: the condition's last description, for the reminder and resolved messages;
 * - last_notified_at: when the last message was fully delivered (reminders count from there);
 * - notify_count: messages delivered in this episode; last_error: the last delivery failure.
 */
export const alertStates = pgTable(
  'alert_states',
  {
    key: text('key').primaryKey(),
    severity: text('severity', { enum: ['info', 'warning', 'critical'] }).notNull(),
    status: text('status', { enum: ['firing', 'resolved'] }).notNull(),
    title: text('title').notNull(),
    text: text('text').notNull(),
    labels: jsonb('labels').notNull().default({}),
    pending: text('pending', { enum: ['firing', 'reminder', 'resolved'] }),
    pendingSentTo: text('pending_sent_to').array().notNull().default(sql`'{}'::text[]`),
    firstFiredAt: timestamp('first_fired_at', { withTimezone: true }).notNull(),
    lastNotifiedAt: timestamp('last_notified_at', { withTimezone: true }),
    resolvedAt: timestamp('resolved_at', { withTimezone: true }),
    notifyCount: integer('notify_count').notNull().default(0),
    lastError: text('last_error'),
  },
  (t) => [index('alert_states_pending_idx').on(t.key).where(sql`pending is not null`)],
);
