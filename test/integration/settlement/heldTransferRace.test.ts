import { sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../../src/clock.ts';
import { verifyPayments } from '../../../src/payments/verifyPayments.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * A confirmation booked while another transaction holds its payment's transfer. The proof skips a
 * held transfer (lockPayingLogs: its holder proves the intent once this commits), but a chain job
 * that read the intents before the confirmation committed decides the transfer without it: rule 9,
 * suspense. Both commit; nothing proved the payment, and its money stayed in suspense (seen as
 * `suspense entries moved to their intent: expected 401 to be 404` in test/e2e/pipelineProcesses).
 * Here a second connection holds the transfer, already in suspense, while the confirmation is
 * booked: the same end state, made deterministic. verifyPayments, the periodic job, must prove it.
 */
const kit = await createIndexerKit('held_transfer_race');
const GRACE = 60_000;
const clock = createManualClock(new Date());
const deps = kit.deps();
/** The verification job as the daemon runs it, on the test's clock. */
const verify = () =>
  verifyPayments({
    db: kit.db.db,
    chains: kit.registry,
    stores: kit.stores,
    rpcs: new Map([[CHAIN_ID, deps.rpc]]),
    clock,
    graceMs: GRACE,
  });

async function kindsOf(refs: string[]): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(sql`
    select kind from ledger_entries where ref_id in ${sql`(${sql.join(
      refs.map((r) => sql`${r}`),
      sql`, `,
    )})`} order by id`);
  return rows.map((r) => r.kind);
}

describe('a confirmation booked while its transfer is held', () => {
  it('behavior: the payment rule 9 put in suspense meanwhile is proven by the verification job, and leaves suspense', async () => {
    const buyer = await kit.chain.wallet('buyer:held');
    await kit.chain.mint('USDT', buyer, 25_000_000n);
    const paid = await kit.chain.transfer('USDT', 'buyer:held', kit.merchant, 25_000_000n);
    await kit.indexUntilFinal(deps);
    // The chain job, the grace over, without the confirmation: suspense.
    clock.set(new Date(Date.now() + 2 * GRACE));
    await settleTransfers(kit.applyDeps(clock, GRACE), CHAIN_ID);
    const { rows } = await kit.db.db.execute<{ id: string; transfer: string }>(sql`
      select id::text, chain_id || ':' || tx_hash || ':' || log_index as transfer from chain_transfers
      where tx_hash = ${paid.txHash.toLowerCase()}`);
    const row = rows[0]!;

    // Another matcher holds the transfer while the confirmation is booked.
    const holder = new pg.Client({ connectionString: kit.db.url });
    await holder.connect();
    let intentId: string;
    try {
      await holder.query('begin');
      await holder.query('select 1 from chain_transfers where id = $1 for update', [row.id]);
      intentId = await kit.confirmedIntent(paid.txHash, { observedAt: clock.now() });
      await holder.query('commit');
    } finally {
      await holder.end();
    }
    expect(await kindsOf([intentId, row.transfer])).toEqual([
      'chain.transfer_in_unmatched',
      'checkout.confirmed',
    ]);

    // The verification job, once the grace after the confirmation is over, proves it.
    clock.set(new Date(clock.now().getTime() + 2 * GRACE));
    await verify();
    expect(await kindsOf([intentId, row.transfer])).toEqual([
      'chain.transfer_in_unmatched',
      'checkout.confirmed',
      'chain.transfer_in_unmatched.reversal',
      'chain.payment_proven',
    ]);
    // Run again: nothing more.
    await verify();
    expect(await kindsOf([intentId, row.transfer])).toHaveLength(4);
  });
});
