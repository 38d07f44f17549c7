import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  check,
  date,
  foreignKey,
  index,
  numeric,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

/**
 * Exchange rates the valuation reads (docs/accounting.md, "Valuation"): units of `currency` per
 * one coin of `asset` on `rate_date` (UTC), exact `numeric`, never a float. `source` says where a
 * rate came from; `source_ref` names it within its source (the intent id for `intent`, '' when
 * there is none), so the same day may hold one imported rate and one rate per fiat-priced intent.
 * Rates are facts the merchant supplies: re-importing the same file changes nothing.
 */
export const rates = pgTable(
  'rates',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    rateDate: date('rate_date', { mode: 'string' }).notNull(),
    asset: text('asset').notNull(),
    currency: text('currency').notNull(),
    rate: numeric('rate').notNull(),
    source: text('source', { enum: ['intent', 'import', 'par'] }).notNull(),
    sourceRef: text('source_ref').notNull().default(''),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('rates_key').on(t.rateDate, t.asset, t.currency, t.source, t.sourceRef),
    check('rates_rate_positive', sql`${t.rate} > 0`),
    check('rates_source_check', sql`${t.source} in ('intent', 'import', 'par')`),
    check('rates_currency_check', sql`${t.currency} ~ '^[A-Z]{3}$'`),
  ],
);

/**
 * A person's correction of an imported rate (`stablebooks rates supersede`): the rate of
 * `rate_date`, `asset` and `currency` is `rate` from now on, for the reason `note`. The imported
 * row (`rate_id`) stays as it was, and so does every earlier supersession: rates stay append-only
 * and the history says what each valuation used. The latest supersession of a day counts.
 */
export const rateSupersessions = pgTable(
  'rate_supersessions',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    /** The imported rate superseded (source `import`). */
    rateId: bigint('rate_id', { mode: 'bigint' }).notNull(),
    rateDate: date('rate_date', { mode: 'string' }).notNull(),
    asset: text('asset').notNull(),
    currency: text('currency').notNull(),
    rate: numeric('rate').notNull(),
    /** The rate in force before this one: the imported rate or the previous supersession's. */
    previousRate: numeric('previous_rate').notNull(),
    note: text('note').notNull(),
    madeBy: text('made_by').notNull(),
    madeAt: timestamp('made_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    foreignKey({ name: 'rate_supersessions_rate_fk', columns: [t.rateId], foreignColumns: [rates.id] }),
    index('rate_supersessions_day_idx').on(t.rateDate, t.asset, t.currency),
    check('rate_supersessions_rate_positive', sql`${t.rate} > 0`),
  ],
);
