import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import { confirmedIntent, TEST_MERCHANT } from '../../helpers/confirmedIntent.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * A payment's work must not grow with the ledger. A new installation's first burst books thousands
 * of payments before autovacuum analyzes the tables, so the planner plans on statistics taken while
 * they were small; plans that then scanned every entry made each payment dearer than the last
 * (docs/benchmarks.md, issue 33). This books a ledger's worth of payments into tables never
 * analyzed (autovacuum off, as it has not run yet in a new installation's first minute), then
 * counts what one more payment reads of ledger_entries.
 */
const { db, ownerDb } = await createMigratedDatabase('payment_cost_flat');
const wallets = { merchant: TEST_MERCHANT, custody: `0x${'cc'.repeat(20)}` as const };
const deps = {
  chains: createChainRegistry(),
  stores: [{ storeId: 'st_a', wallets: new Map([[8453, wallets]]) }],
  accounts: createAccountCache(),
};

/** Intent n, confirmed, paid by a transaction of its own. */
function confirmed(n: number) {
  const id = n.toString(16).padStart(24, '0');
  return confirmedIntent(id, { tx_hash: `0x${n.toString(16).padStart(64, '0')}`, tx_hash_2: null });
}

const observedAt = new Date(Date.UTC(2026, 10, 20, 12, 0, 0));
const book = (tx: Parameters<Parameters<typeof db.transaction>[0]>[0], n: number) =>
  applyIntentSnapshot(tx, deps, { storeId: 'st_a', intent: confirmed(n), source: 'webhook', observedAt });

describe('a payment on a ledger grown since its statistics were taken', () => {
  it('behavior: reads ledger_entries by index only, a handful of rows, with 600 entries booked', async () => {
    const tables = ['ledger_entries', 'ledger_postings', 'ledger_accounts', 'checkout_intents', 'findings'];
    for (const table of tables) {
      await ownerDb.execute(sql.raw(`alter table ${table} set (autovacuum_enabled = off)`));
    }
    for (let n = 1; n <= 600; n += 50) {
      await db.transaction(async (tx) => {
        for (let i = n; i < n + 50; i++) await book(tx, i);
      });
    }

    const read = await db.transaction(async (tx) => {
      // The counters of this session not yet flushed to the statistics: a difference taken inside
      // one transaction is that payment's alone.
      const counters = async () =>
        (
          await tx.execute<{ seq_scan: string; seq_tup_read: string; idx_tup_fetch: string }>(
            sql`select seq_scan::text, seq_tup_read::text, idx_tup_fetch::text from pg_stat_xact_user_tables
                where relname = 'ledger_entries'`,
          )
        ).rows[0] ?? { seq_scan: '0', seq_tup_read: '0', idx_tup_fetch: '0' };
      const before = await counters();
      const result = await book(tx, 1_000);
      const after = await counters();
      return {
        posted: result.posted !== null,
        seq_scan: Number(after.seq_scan) - Number(before.seq_scan),
        seq_tup_read: Number(after.seq_tup_read) - Number(before.seq_tup_read),
        idx_tup_fetch: Number(after.idx_tup_fetch) - Number(before.idx_tup_fetch),
      };
    });

    expect(read.posted).toBe(true);
    // Before: the postings trigger hashed the whole table (1 scan, every row), and the facts
    // statement read every checkout.confirmed entry through the kind index, four times over.
    expect({ seqScans: read.seq_scan, rowsScanned: read.seq_tup_read }).toEqual({
      seqScans: 0,
      rowsScanned: 0,
    });
    expect(read.idx_tup_fetch).toBeLessThan(20);
  });
});
