import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
} from 'drizzle-orm/pg-core';
import { numeric78 } from '../ledger/schema.ts';

/**
 * What the chain itself says (docs/accounting.md, "Payments, payouts and the chain"): the indexer's cursor per chain, every ERC-20
 * Transfer log of an accepted token into or out of a watched wallet, the wallets learnt at run
 * time (claim-link pools), and the balance proofs.
 */

/**
 * Per chain: the last block the indexer has read (number and hash), and the chain's head and
 * finality seen then. verified_block: every block up to it had its logs read while final (a read
 * near the head may miss logs; chainCursor.ts); null in a row written without it, read as
 * least(block_number, finalized_block) (migration 0011).
 */
export const chainCursors = pgTable('chain_cursors', {
  chainId: bigint('chain_id', { mode: 'number' }).primaryKey(),
  blockNumber: bigint('block_number', { mode: 'bigint' }).notNull(),
  blockHash: text('block_hash').notNull(),
  headBlock: bigint('head_block', { mode: 'bigint' }),
  finalizedBlock: bigint('finalized_block', { mode: 'bigint' }),
  verifiedBlock: bigint('verified_block', { mode: 'bigint' }),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * One Transfer log in one block. A reorg that moves the log to another block is another row (the
 * block hash is part of the key): the old one becomes `orphaned`, never deleted.
 * - state: pending (above finality), final (at or below it), orphaned (its block left the chain);
 * - source: logs (the indexer's eth_getLogs) or receipt (single-transaction verification);
 * - matched_as / matched_ref: what the ledger booked from it (ChainEntryRole kind) and for what
 *   (intent or claim-link id); null until applied, `ignored` when it books nothing,
 *   `claim_link_fee_sweep` for the service's fee leaving a pool (books nothing, counted by the matcher);
 * - applied_at: a final row was matched and booked; unwound_at: an orphaned row's booking was
 *   reversed;
 * - revival: how many times the inclusion came back after its booking was unwound (the chain
 *   returned to the block hash: a flip-back reorg, or a false reorg from one lying URL). The row is
 *   read again as pending, and what it books now carries the revival in its idempotency keys, so
 *   it does not collide with the reversed entries of before (storeTransfers.ts).
 * Also indexed, outside this declaration (drizzle cannot express INCLUDE): chain_transfers_payment_ref_idx
 * on matched_ref, including value, over final payment proofs, for reconciliation's matching
 * (migration 0007); chain_transfers_unmatched_out_idx on (chain_id, from_address, to_address) over
 * final owner transfers out (rule 9), where a late-known payment return is looked for (migration
 * 0013, rematchPaymentReturns).
 */
export const chainTransfers = pgTable(
  'chain_transfers',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    chainId: bigint('chain_id', { mode: 'number' }).notNull(),
    txHash: text('tx_hash').notNull(),
    logIndex: integer('log_index').notNull(),
    blockNumber: bigint('block_number', { mode: 'bigint' }).notNull(),
    blockHash: text('block_hash').notNull(),
    blockTime: timestamp('block_time', { withTimezone: true }).notNull(),
    token: text('token').notNull(),
    fromAddress: text('from_address').notNull(),
    toAddress: text('to_address').notNull(),
    value: numeric78('value').notNull(),
    state: text('state', { enum: ['pending', 'final', 'orphaned'] })
      .notNull()
      .default('pending'),
    source: text('source', { enum: ['logs', 'receipt'] }).notNull(),
    foundAt: timestamp('found_at', { withTimezone: true }).notNull().defaultNow(),
    finalAt: timestamp('final_at', { withTimezone: true }),
    orphanedAt: timestamp('orphaned_at', { withTimezone: true }),
    storeId: text('store_id'),
    matchedAs: text('matched_as'),
    matchedRef: text('matched_ref'),
    appliedAt: timestamp('applied_at', { withTimezone: true }),
    /** When the entry booked from an orphaned inclusion was reversed (rule 3). */
    unwoundAt: timestamp('unwound_at', { withTimezone: true }),
    revival: integer('revival').notNull().default(0),
  },
  (t) => [
    unique('chain_transfers_inclusion').on(t.chainId, t.txHash, t.logIndex, t.blockHash),
    index('chain_transfers_state_idx').on(t.chainId, t.state, t.blockNumber),
    index('chain_transfers_tx_idx').on(t.chainId, t.txHash),
    index('chain_transfers_unapplied_idx')
      .on(t.chainId, t.blockNumber)
      .where(sql`state = 'final' and applied_at is null`),
    check(
      'chain_transfers_lowercase',
      sql`${t.txHash} = lower(${t.txHash}) and ${t.blockHash} = lower(${t.blockHash})
      and ${t.token} = lower(${t.token}) and ${t.fromAddress} = lower(${t.fromAddress}) and ${t.toAddress} = lower(${t.toAddress})`,
    ),
    check('chain_transfers_value', sql`${t.value} >= 0`),
    check('chain_transfers_revival', sql`${t.revival} >= 0`),
  ],
);

/**
 * Wallets watched beside the configured ones (merchant and custody come from STORES_FILE):
 * claim-link pools, learnt from their funding transfer. `scanned_to` is how far the indexer has
 * read this wallet's history; a new pool is caught up from `from_block` before it is trusted.
 */
export const chainWatchedWallets = pgTable(
  'chain_watched_wallets',
  {
    chainId: bigint('chain_id', { mode: 'number' }).notNull(),
    address: text('address').notNull(),
    role: text('role', { enum: ['pool'] }).notNull(),
    storeId: text('store_id').notNull(),
    claimLinkId: text('claim_link_id'),
    fromBlock: bigint('from_block', { mode: 'bigint' }).notNull(),
    caughtUp: boolean('caught_up').notNull().default(false),
    addedAt: timestamp('added_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.address] })],
);

/**
 * Balance proofs: for one watched (chain, token, wallet), the ledger's balance of the accounts
 * that hold it against balanceOf(wallet) at one finalized block. `ok` is null when the chain could
 * not be read: a failed proof, never a zero.
 */
export const balanceProofs = pgTable(
  'balance_proofs',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    chainId: bigint('chain_id', { mode: 'number' }).notNull(),
    token: text('token').notNull(),
    symbol: text('symbol').notNull(),
    wallet: text('wallet').notNull(),
    role: text('role').notNull(),
    blockNumber: bigint('block_number', { mode: 'bigint' }),
    ledgerBalance: numeric78('ledger_balance').notNull(),
    chainBalance: numeric78('chain_balance'),
    ok: boolean('ok'),
    error: text('error'),
    details: jsonb('details').notNull().default({}),
    provedAt: timestamp('proved_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('balance_proofs_wallet_idx').on(t.chainId, t.wallet, t.token, t.provedAt)],
);

/**
 * Allocations (docs/accounting.md, "Pieces and bundles"): how much of one side of a final
 * transfer (the sender's outflow or the receiver's inflow) settles which obligation, by which
 * rule, and the entry it caused. A transfer may be split over several obligations (one transfer
 * paying two intents) and an obligation settled by several transfers (a payment topped up, a
 * funding in two parts). Append-only: a reorg or a re-match releases an allocation with a row of
 * the negated amount, never an update; the triggers of migration 0022 keep each (transfer, side)
 * between zero and the transfer's value, and each (transfer, side, obligation, purpose) at zero
 * or above.
 * - side: `in` (the receiving wallet's side) or `out` (the sending wallet's side);
 * - obligation_type / obligation_id: `checkout_intent` (intent id), `claim_link` (link id),
 *   `suspense` (the transfer's own id: money nothing explains yet), `owner` (the store id: an
 *   owner's transfer);
 * - purpose: `payment`, `payment_excess`, `funding`, `fee_sweep`, `claim`, `refund`, `return`,
 *   `unmatched`;
 * - entry_id: the entry the allocation caused (null when it books nothing: a fee sweep, a
 *   funding piece whose entry another piece carries).
 */
export const allocations = pgTable(
  'allocations',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    transferId: bigint('transfer_id', { mode: 'bigint' })
      .notNull()
      .references(() => chainTransfers.id),
    side: text('side', { enum: ['in', 'out'] }).notNull(),
    obligationType: text('obligation_type', {
      enum: ['checkout_intent', 'claim_link', 'suspense', 'owner'],
    }).notNull(),
    obligationId: text('obligation_id').notNull(),
    purpose: text('purpose', {
      enum: ['payment', 'payment_excess', 'funding', 'fee_sweep', 'claim', 'refund', 'return', 'unmatched'],
    }).notNull(),
    amount: numeric78('amount').notNull(),
    rule: text('rule').notNull(),
    entryId: bigint('entry_id', { mode: 'bigint' }),
    storeId: text('store_id').notNull(),
    /** The allocation this row releases (a negative amount); null for an allocation. */
    releases: bigint('releases', { mode: 'bigint' }),
    reason: text('reason'),
    allocatedAt: timestamp('allocated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('allocations_transfer_idx').on(t.transferId, t.side),
    index('allocations_obligation_idx').on(t.obligationType, t.obligationId, t.purpose),
    unique('allocations_releases_key').on(t.releases),
    check('allocations_amount_sign', sql`(${t.releases} is null) = (${t.amount} > 0) and ${t.amount} <> 0`),
    check('allocations_side', sql`${t.side} in ('in', 'out')`),
    check(
      'allocations_obligation_type',
      sql`${t.obligationType} in ('checkout_intent', 'claim_link', 'suspense', 'owner')`,
    ),
    check(
      'allocations_purpose',
      sql`${t.purpose} in ('payment', 'payment_excess', 'funding', 'fee_sweep', 'claim', 'refund', 'return', 'unmatched')`,
    ),
  ],
);
