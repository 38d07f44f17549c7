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
} from 'drizzle-orm/pg-core';

/**
 * Reconciliation runs: one row per (period, store), replaced by a rerun of the same period (the
 * run is idempotent; its files are overwritten and their checksums recorded here).
 * - store_key: the store id, or `*` for a run over every store (a unique key cannot hold null);
 * - status: running, completed (the run finished; `passed` says whether the books are right),
 *   failed (the run itself broke; see error);
 * - counts: findings new / open / resolved in the period, checks by status, and the ledger chain
 *   head the run published (`ledger_chain`: seq and hash; the next run checks the chain against it);
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
