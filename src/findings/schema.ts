import { sql } from 'drizzle-orm';
import { bigserial, index, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

/**
 * Findings: every disagreement any part of the daemon notices (docs/accounting.md, "Findings"), at most one
 * open per (kind, ref). A finding is refreshed (last_seen_at) while its cause persists and
 * resolved (resolved_at) when it clears; a person may acknowledge it (acked_at, ack_note).
 */
export const findings = pgTable(
  'findings',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    kind: text('kind').notNull(),
    severity: text('severity', { enum: ['info', 'warning', 'critical'] }).notNull(),
    storeId: text('store_id'),
    refType: text('ref_type').notNull(),
    refId: text('ref_id').notNull(),
    details: jsonb('details').notNull().default({}),
    firstSeenAt: timestamp('first_seen_at', { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
    resolvedAt: timestamp('resolved_at', { withTimezone: true }),
    ackedAt: timestamp('acked_at', { withTimezone: true }),
    ackNote: text('ack_note'),
  },
  (t) => [
    uniqueIndex('findings_open_key').on(t.kind, t.refType, t.refId).where(sql`resolved_at is null`),
    index('findings_kind_idx').on(t.kind),
  ],
);
