import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  check,
  foreignKey,
  index,
  pgTable,
  text,
  timestamp,
  unique,
} from 'drizzle-orm/pg-core';
import { findings } from '../findings/schema.ts';
import { ledgerEntries, numeric78 } from '../ledger/schema.ts';

/**
 * A person's corrections of what the rules leave "for a person" (docs/accounting.md,
 * "Corrections"): who moved how much of a finding's leftover from which account to which, why,
 * and when, beside the `adjustment.moved` entry that did it. A correction is undone by a reversal
 * of its entry, never deleted: `undone_at` (and who, and why) mark it.
 */
export const corrections = pgTable(
  'corrections',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    findingId: bigint('finding_id', { mode: 'bigint' }).notNull(),
    /** The `adjustment.moved` entry. */
    entryId: bigint('entry_id', { mode: 'bigint' }).notNull(),
    storeId: text('store_id').notNull(),
    /** Account kinds (the store, chain and token are the entry's). */
    fromAccount: text('from_account').notNull(),
    toAccount: text('to_account').notNull(),
    /** Base units moved, positive. */
    amount: numeric78('amount').notNull(),
    note: text('note').notNull(),
    madeBy: text('made_by').notNull(),
    madeAt: timestamp('made_at', { withTimezone: true }).notNull(),
    undoneAt: timestamp('undone_at', { withTimezone: true }),
    undoneBy: text('undone_by'),
    undoNote: text('undo_note'),
  },
  (t) => [
    foreignKey({ name: 'corrections_finding_fk', columns: [t.findingId], foreignColumns: [findings.id] }),
    foreignKey({ name: 'corrections_entry_fk', columns: [t.entryId], foreignColumns: [ledgerEntries.id] }),
    unique('corrections_entry_key').on(t.entryId),
    index('corrections_store_idx').on(t.storeId),
    check('corrections_amount_positive', sql`${t.amount} > 0`),
    check('corrections_undo_check', sql`(undone_at is null) = (undone_by is null)`),
  ],
);
