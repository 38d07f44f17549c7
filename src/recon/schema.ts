import { sql } from 'drizzle-orm';
import {
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  unique,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

/**
 * Findings: every disagreement any part of the daemon notices (DESIGN.md section 9), at most one
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

/**
 * Reconciliation runs: one row per (period, store), replaced by a rerun of the same period (the
 * run is idempotent; its files are overwritten and their checksums recorded here).
 * - store_key: the store id, or `*` for a run over every store (a unique key cannot hold null);
 * - status: running, completed (the run finished; `passed` says whether the books are right),
 *   failed (the run itself broke; see error);
 * - counts: findings new / open / resolved in the period and checks by status;
 * - files: [{ name, path, sha256, bytes }] of the written reports.
 */
export const reconRuns = pgTable(
  'recon_runs',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    periodFrom: timestamp('period_from', { withTimezone: true }).notNull(),
    periodTo: timestamp('period_to', { withTimezone: true }).notNull(),
    storeKey: text('store_key').notNull(),
    storeId: text('store_id'),
    trigger: text('trigger', { enum: ['schedule', 'cli'] }).notNull(),
    status: text('status', { enum: ['running', 'completed', 'failed'] }).notNull(),
    passed: boolean('passed'),
    phase: text('phase'),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    durationMs: integer('duration_ms'),
    counts: jsonb('counts').notNull().default({}),
    files: jsonb('files').notNull().default([]),
    error: text('error'),
  },
  (t) => [
    unique('recon_runs_period_store').on(t.periodFrom, t.periodTo, t.storeKey),
    index('recon_runs_finished_idx').on(t.finishedAt),
  ],
);
