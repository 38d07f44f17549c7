import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  customType,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  unique,
} from 'drizzle-orm/pg-core';

/**
 * The ledger tables (docs/accounting.md, "Ledger tables": the names and columns are a contract that people and
 * tools query). Rules PostgreSQL itself enforces live in migrations/*_ledger_invariants.sql.
 */

/** numeric(78,0) read and written as a decimal string: never through a JavaScript number. */
export const numeric78 = customType<{ data: string; driverData: string }>({
  dataType: () => 'numeric(78,0)',
});

/** PostgreSQL's 64-bit transaction id, which orders postings for balance checkpoints. */
const xid8 = customType<{ data: string; driverData: string }>({ dataType: () => 'xid8' });

export const ledgerAccounts = pgTable(
  'ledger_accounts',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    code: text('code').notNull().unique(),
    type: text('type', { enum: ['asset', 'liability', 'income', 'expense', 'equity'] }).notNull(),
    storeId: text('store_id').notNull(),
    chainId: bigint('chain_id', { mode: 'number' }).notNull(),
    /** ERC-20 contract, lowercase. */
    token: text('token').notNull(),
    symbol: text('symbol').notNull(),
    decimals: integer('decimals').notNull(),
    /** `<chain id>:<token>`; generated, so it cannot disagree with chain_id and token. */
    asset: text('asset').notNull().generatedAlwaysAs(sql`chain_id::text || ':' || token`),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [unique('ledger_accounts_id_asset_key').on(t.id, t.asset)],
);

export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    idempotencyKey: text('idempotency_key').notNull().unique(),
    kind: text('kind').notNull(),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
    recordedAt: timestamp('recorded_at', { withTimezone: true }).notNull().defaultNow(),
    storeId: text('store_id').notNull(),
    refType: text('ref_type').notNull(),
    refId: text('ref_id').notNull(),
    /** Unique: an entry is reversed at most once. */
    reversesEntryId: bigint('reverses_entry_id', { mode: 'bigint' }).unique(),
    memo: text('memo'),
    metadata: jsonb('metadata').notNull().default({}),
    /** SHA-256 of the entry's content, to tell an idempotent replay from a conflicting one. */
    contentHash: text('content_hash').notNull(),
    /** The writing transaction: postings may be added only by the transaction that wrote the entry. */
    txId: xid8('tx_id').notNull().default(sql`pg_current_xact_id()`),
  },
  (t) => [
    // With the kind: "has this intent a rule-1 entry" is one probe. On (ref_type, ref_id) alone the
    // planner, on statistics taken while the table was small, answered it from the kind index,
    // reading every entry of that kind (docs/benchmarks.md, issue 33).
    index('ledger_entries_ref_kind_idx').on(t.refType, t.refId, t.kind),
    index('ledger_entries_kind_idx').on(t.kind),
    // The sealing job reads the entries not yet sealed by transaction id (src/ledger/sealLedger.ts).
    index('ledger_entries_tx_idx').on(t.txId),
    foreignKey({ name: 'ledger_entries_reverses_fk', columns: [t.reversesEntryId], foreignColumns: [t.id] }),
  ],
);

export const ledgerPostings = pgTable(
  'ledger_postings',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    entryId: bigint('entry_id', { mode: 'bigint' }).notNull(),
    accountId: bigint('account_id', { mode: 'bigint' }).notNull(),
    asset: text('asset').notNull(),
    /** Base units; positive = debit, negative = credit. */
    amount: numeric78('amount').notNull(),
    /** Copied from the entry (immutable), so balances at a time need no join. */
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
    /** The writing transaction; see src/ledger/balances.ts for why. */
    txId: xid8('tx_id').notNull().default(sql`pg_current_xact_id()`),
  },
  (t) => [
    foreignKey({
      name: 'ledger_postings_entry_fk',
      columns: [t.entryId],
      foreignColumns: [ledgerEntries.id],
    }),
    // Composite: a posting's asset must be its account's asset (invariant c of the ledger issue).
    foreignKey({
      name: 'ledger_postings_account_asset_fk',
      columns: [t.accountId, t.asset],
      foreignColumns: [ledgerAccounts.id, ledgerAccounts.asset],
    }),
    index('ledger_postings_entry_idx').on(t.entryId),
    // The per-account indexes cover `amount` (INCLUDE), which drizzle cannot express; they are
    // created in migrations/0001_ledger_invariants.sql.
  ],
);

/**
 * Balance checkpoints: the balance of an account over every posting whose transaction id is
 * below `horizon`. Derived data (rebuildable from postings), so it may be written and pruned.
 */
export const ledgerBalanceCheckpoints = pgTable(
  'ledger_balance_checkpoints',
  {
    accountId: bigint('account_id', { mode: 'bigint' }).notNull(),
    horizon: xid8('horizon').notNull(),
    balance: numeric78('balance').notNull(),
    postings: bigint('postings', { mode: 'bigint' }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique('ledger_balance_checkpoints_pk').on(t.accountId, t.horizon),
    foreignKey({
      name: 'ledger_balance_checkpoints_account_fk',
      columns: [t.accountId],
      foreignColumns: [ledgerAccounts.id],
    }),
  ],
);

/**
 * The hash chain over the ledger's entries (docs/accounting.md, "The entries' hash chain"): seal
 * `seq` covers entry `entry_id` and the seal before it (`prev_hash`), so a rewrite of any sealed
 * entry, even by the schema's owner with the triggers off, breaks every hash from there on, and a
 * chain head printed in a report sent out earlier no longer matches. Append-only
 * (migrations/0017). Written by the sealing job (src/ledger/sealLedger.ts), never by posters.
 */
export const ledgerSeals = pgTable(
  'ledger_seals',
  {
    /** 1, 2, 3, … with no gap: the chain's order. */
    seq: bigint('seq', { mode: 'bigint' }).primaryKey(),
    entryId: bigint('entry_id', { mode: 'bigint' }).notNull().unique(),
    /** The previous seal's hash; 64 zeros for seq 1. */
    prevHash: text('prev_hash').notNull(),
    /** sha256 of prev_hash and the entry's canonical content (src/ledger/entrySealContent.ts), hex. */
    hash: text('hash').notNull(),
    /** The sealing run's horizon: every entry whose tx_id is below it was sealed by then. */
    horizon: xid8('horizon').notNull(),
    sealedAt: timestamp('sealed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    foreignKey({ name: 'ledger_seals_entry_fk', columns: [t.entryId], foreignColumns: [ledgerEntries.id] }),
  ],
);
