import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { watchedWallets } from '../../../src/chain/watchedWallets.ts';
import { createManualClock } from '../../../src/clock.ts';
import { balances, trialBalance } from '../../../src/ledger/balances.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { claimLinkFunded } from '../../../src/ledger/rules/claimLinkRules.ts';
import { markCancelled } from '../../../src/payouts/closeLink.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * A claim link funded and refunded while the matcher was not running (downtime, or a finality depth
 * that makes both final at once): the funding (custody to pool) and the refund (pool back to
 * custody) are matched in one batch. The funding teaches the pool wallet; the refund after it must
 * be matched as the link's refund (docs/accounting.md, rule 8), as if each transfer had come in a
 * batch of its own: not as an unmatched transfer into custody (rule 9, suspense).
 */
const kit = await createIndexerKit('claim_link_same_batch');
const deps = kit.deps();
const clock = createManualClock(new Date());
const applyDeps = kit.applyDeps(clock, 60_000);
const { accounts } = kit;
const USDT = kit.registry.token(CHAIN_ID, kit.chain.tokens.USDT.address)!;
const FEE = 500_000n;

/** A created payout of `amount` USDT with its link open in our books (rule 5 posted), as createPayout leaves it. */
async function createdPayout(payoutId: string, linkId: string, amount: string): Promise<void> {
  await kit.db.db.execute(sql`
    insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                         claim_link_id, link_status, funded_at)
    values (${payoutId}, 'st_a', ${`ref-${payoutId}`}, ${amount}, 1, ${CHAIN_ID}, ${USDT.address}, 'created',
            ${linkId}, 'link_sent', ${clock.now().toISOString()}::timestamptz)`);
  const funded = claimLinkFunded({
    storeId: 'st_a',
    claimLinkId: linkId,
    token: USDT,
    amount,
    occurredAt: clock.now(),
  });
  await postEntry(kit.db.db, funded.entry!, { accounts });
}

/** Indexes until every stored transfer is final (the chain is mined past the depth first). */
async function indexUntilFinal(): Promise<void> {
  await kit.raw('anvil_mine', ['0x3']);
  for (let i = 0; i < 5; i++) {
    await indexChainPass(deps, CHAIN_ID);
    if ((await kit.rows()).every((r) => r.state === 'final')) return;
  }
  throw new Error('transfers not final');
}

describe('claim link funded and refunded within one matcher batch', () => {
  it('behavior: the refund is rule 8 (refunded_at set, no suspense), custody and the trial balance agree', async () => {
    // Custody is topped up and that top-up is matched (rule 9) before the link exists.
    await kit.chain.mint('USDT', kit.custody, 10_000_000n);
    await indexUntilFinal();
    await settleTransfers(applyDeps, CHAIN_ID);

    const linkId = 'cl_same_batch';
    await createdPayout('po_same_batch', linkId, '3');
    const pool = await kit.chain.wallet(`pool:${linkId}`);
    const funding = await kit.chain.transfer('USDT', 'custody:biz_1', pool, 3_000_000n + FEE);
    await kit.db.db.execute(
      sql`update payouts set funding_tx_hash = ${funding.txHash} where id = 'po_same_batch'`,
    );
    await kit.db.db.transaction((tx) =>
      markCancelled(tx, { chains: kit.registry, accounts, clock }, 'po_same_batch', 'api'),
    );
    const refund = await kit.chain.transfer('USDT', `pool:${linkId}`, kit.custody, 3_000_000n);
    await indexUntilFinal();

    // Both are final before the matcher runs once.
    const pending = await kit.db.db.execute<{ tx_hash: string }>(sql`
      select tx_hash from chain_transfers where state = 'final' and applied_at is null order by block_number, log_index`);
    expect(pending.rows.map((r) => r.tx_hash)).toEqual([funding.txHash, refund.txHash]);
    const outcome = await settleTransfers(applyDeps, CHAIN_ID);
    expect(outcome).toEqual({ applied: 2, deferred: 0, unwound: 0 });

    const matched = await kit.db.db.execute<{ tx_hash: string; matched_as: string; matched_ref: string }>(sql`
      select tx_hash, matched_as, matched_ref from chain_transfers
      where tx_hash in (${funding.txHash}, ${refund.txHash}) order by block_number, log_index`);
    expect(matched.rows).toEqual([
      { tx_hash: funding.txHash, matched_as: 'claim_link_funding_fee', matched_ref: linkId },
      { tx_hash: refund.txHash, matched_as: 'claim_link_refunded', matched_ref: linkId },
    ]);
    const unmatched = await kit.db.db.execute(sql`
      select 1 from ledger_entries
      where kind like 'chain.transfer_%_unmatched' and metadata->>'tx_hash' = ${refund.txHash}`);
    expect(unmatched.rows).toEqual([]);
    const findings = await kit.db.db.execute(sql`
      select 1 from findings where kind like 'unmatched_transfer%' and details->>'tx_hash' = ${refund.txHash}`);
    expect(findings.rows).toEqual([]);

    const kinds = await kit.db.db.execute<{ kind: string }>(
      sql`select kind from ledger_entries where ref_id = ${linkId} order by id`,
    );
    expect(kinds.rows.map((r) => r.kind)).toEqual([
      'claim_link.funded',
      'claim_link.cancelled',
      'claim_link.funding_fee',
      'claim_link.refunded',
    ]);
    const payout = await kit.db.db.execute<{ refunded_at: Date | null; refund_tx_hash: string | null }>(
      sql`select refunded_at, refund_tx_hash from payouts where id = 'po_same_batch'`,
    );
    expect(payout.rows[0]?.refunded_at).not.toBeNull();
    expect(payout.rows[0]?.refund_tx_hash).toBe(refund.txHash);

    // The books: custody equals its balanceOf, nothing left in the pool or owed by it, suspense
    // holds only the top-up, and every asset nets to zero.
    const byKind = new Map<string, bigint>();
    for (const b of await balances(kit.db.db, { storeId: 'st_a' })) {
      if (b.symbol !== 'USDT') continue;
      const kind = b.code.split(':').slice(0, 2).join(':');
      byKind.set(kind, (byKind.get(kind) ?? 0n) + b.balance);
    }
    expect(byKind.get('assets:custody')).toBe(await kit.chain.balanceOf('USDT', kit.custody));
    expect(byKind.get('assets:custody')).toBe(10_000_000n - FEE);
    expect(byKind.get('assets:claim_pool') ?? 0n).toBe(0n);
    expect(byKind.get('assets:refund_receivable') ?? 0n).toBe(0n);
    expect(byKind.get('expense:payout_fees')).toBe(FEE);
    const suspense = [...byKind].filter(([k]) => k.includes('suspense')).map(([, v]) => v);
    expect(suspense).toEqual([-10_000_000n]);
    for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);

    // Idempotent: a second run finds nothing to do and books nothing more.
    expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 0, unwound: 0 });
    const again = await kit.db.db.execute(
      sql`select count(*)::int as n from ledger_entries where ref_id = ${linkId}`,
    );
    expect(again.rows).toEqual([{ n: 4 }]);
  });

  it('behavior: while another matcher holds the funding, the refund waits (not suspense), then is rule 8', async () => {
    const linkId = 'cl_race';
    await createdPayout('po_race', linkId, '2');
    const pool = await kit.chain.wallet(`pool:${linkId}`);
    const funding = await kit.chain.transfer('USDT', 'custody:biz_1', pool, 2_000_000n + FEE);
    await kit.db.db.execute(sql`update payouts set funding_tx_hash = ${funding.txHash} where id = 'po_race'`);
    await kit.db.db.transaction((tx) =>
      markCancelled(tx, { chains: kit.registry, accounts, clock }, 'po_race', 'api'),
    );
    const refund = await kit.chain.transfer('USDT', `pool:${linkId}`, kit.custody, 2_000_000n);
    await indexUntilFinal();

    // Another matcher run has claimed the funding row and not committed yet.
    const other = await kit.db.pool.connect();
    try {
      await other.query('begin');
      await other.query('select id from chain_transfers where tx_hash = $1 for update', [funding.txHash]);
      expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 1, unwound: 0 });
      const waiting = await kit.db.db.execute<{ applied_at: Date | null }>(
        sql`select applied_at from chain_transfers where tx_hash = ${refund.txHash}`,
      );
      expect(waiting.rows).toEqual([{ applied_at: null }]);
    } finally {
      await other.query('rollback');
      other.release();
    }

    expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 2, deferred: 0, unwound: 0 });
    const matched = await kit.db.db.execute<{ matched_as: string }>(sql`
      select matched_as from chain_transfers where tx_hash in (${funding.txHash}, ${refund.txHash})
      order by block_number, log_index`);
    expect(matched.rows.map((r) => r.matched_as)).toEqual(['claim_link_funding_fee', 'claim_link_refunded']);
    const unmatched = await kit.db.db.execute(sql`
      select 1 from ledger_entries
      where kind like 'chain.transfer_%_unmatched' and metadata->>'tx_hash' = ${refund.txHash}`);
    expect(unmatched.rows).toEqual([]);
    for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
  });

  it('behavior: a pool whose refund is booked leaves the log filter; orphaning the refund brings it back', async () => {
    const pool = (await kit.chain.wallet('pool:cl_race')).toLowerCase();
    const filterHas = async () =>
      (await watchedWallets(kit.db.db, { stores: kit.stores }, CHAIN_ID, { closedPools: 'exclude' })).some(
        (w) => w.address === pool,
      );
    // The matcher still knows it (rows stored before are classified by it); the filter does not.
    const all = await watchedWallets(kit.db.db, { stores: kit.stores }, CHAIN_ID);
    expect(all.some((w) => w.address === pool && w.role === 'pool')).toBe(true);
    expect(await filterHas()).toBe(false);

    // The service sweeps the fee left in the pool: not ours to book, and no longer read.
    const sweep = await kit.chain.transfer(
      'USDT',
      'pool:cl_race',
      await kit.chain.wallet('service:fees'),
      FEE,
    );
    await indexUntilFinal();
    const stored = await kit.db.db.execute(
      sql`select 1 from chain_transfers where tx_hash = ${sweep.txHash}`,
    );
    expect(stored.rows).toEqual([]);

    // A reorg that orphans the refund (rule 3 will unwind it): the pool is watched again, so the
    // refund's new inclusion is read.
    const refundRow = sql`from_address = ${pool} and matched_as = 'claim_link_refunded'`;
    await kit.db.db.execute(sql`update chain_transfers set state = 'orphaned' where ${refundRow}`);
    try {
      expect(await filterHas()).toBe(true);
    } finally {
      await kit.db.db.execute(sql`update chain_transfers set state = 'final' where ${refundRow}`);
    }
    expect(await filterHas()).toBe(false);
  });
});
