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
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { ledgerEntries } from '../ledger/schema.ts';

/**
 * A person's classifications of money in suspense (docs/accounting.md, rule 10): who said what an
 * item was, why, and when, beside the entry that moved it out of suspense. A classification is
 * reversed, never deleted: `reversed_at` (and who, and why) when a person unclassifies it or a rule
 * later explains the transfer itself. At most one live classification per item.
 */
export const suspenseClassifications = pgTable(
  'suspense_classifications',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    /** The rule-9 entry whose money was in suspense (the item). */
    suspenseEntryId: bigint('suspense_entry_id', { mode: 'bigint' }).notNull(),
    /** The `suspense.classified` entry that moved it out. */
    entryId: bigint('entry_id', { mode: 'bigint' }).notNull(),
    storeId: text('store_id').notNull(),
    classification: text('classification', {
      enum: ['owner_contribution', 'owner_withdrawal', 'refund_due', 'income_other'],
    }).notNull(),
    note: text('note').notNull(),
    classifiedBy: text('classified_by').notNull(),
    classifiedAt: timestamp('classified_at', { withTimezone: true }).notNull(),
    reversedAt: timestamp('reversed_at', { withTimezone: true }),
    /** A person's name, or `stablebooks` when a rule explained the transfer after all. */
    reversedBy: text('reversed_by'),
    reversalNote: text('reversal_note'),
  },
  (t) => [
    foreignKey({
      name: 'suspense_classifications_suspense_entry_fk',
      columns: [t.suspenseEntryId],
      foreignColumns: [ledgerEntries.id],
    }),
    foreignKey({
      name: 'suspense_classifications_entry_fk',
      columns: [t.entryId],
      foreignColumns: [ledgerEntries.id],
    }),
    unique('suspense_classifications_entry_key').on(t.entryId),
    uniqueIndex('suspense_classifications_live_key').on(t.suspenseEntryId).where(sql`reversed_at is null`),
    index('suspense_classifications_store_idx').on(t.storeId),
    check(
      'suspense_classifications_classification_check',
      sql`classification in ('owner_contribution', 'owner_withdrawal', 'refund_due', 'income_other')`,
    ),
    check('suspense_classifications_reversal_check', sql`(reversed_at is null) = (reversed_by is null)`),
  ],
);
