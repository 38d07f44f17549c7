import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { createManualClock } from '../../../src/clock.ts';
import { balances } from '../../../src/ledger/balances.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { CheckoutStatus } from '../../../src/svc/models/checkoutStatus.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * Two stores sharing one merchant wallet (found by the simulator, seeds 12 and 36): a payment that
 * no rule books, of a failed intent of the second store, goes to that store's suspense, and its
 * return clears it there, not in the first store's books.
 */
const kit = await createIndexerKit('shared_merchant');
const deps = kit.deps();
const clock = createManualClock(new Date());
const [first, second] = kit.stores;
if (!first || !second) throw new Error('the kit has two stores');
const shared = kit.applyDeps(clock, 60_000);
const settlement = {
  ...shared,
  config: { ...shared.config, stores: [first, { ...second, wallets: first.wallets }] },
};
const X = 7_000_000n;

async function suspenseOf(storeId: string): Promise<bigint> {
  let sum = 0n;
  for (const b of await balances(kit.db.db, { storeId }))
    if (b.code.startsWith('assets:suspense')) sum += b.balance;
  return sum;
}

describe('a merchant wallet shared by two stores', () => {
  it("behavior: a failed intent's kept payment is the intent's store's suspense, and its return clears it there", async () => {
    const payer = await kit.chain.wallet('payer:shared');
    await kit.chain.mint('USDC', payer, 100_000_000n);
    const paid = await kit.chain.transfer('USDC', 'payer:shared', kit.merchant, X);
    await kit.db.db.execute(sql`
      insert into checkout_intents (id, store_id, status, tracked_via, tx_hash, chain_id, amount_coins)
      values ('ci_shared_b', ${second.storeId}, ${CheckoutStatus.REJECTED}, 'api', ${paid.txHash}, ${CHAIN_ID}, '7')`);
    await kit.chain.mine(3);
    for (let i = 0; i < 3; i++) await indexChainPass(deps, CHAIN_ID);
    clock.set(new Date());
    await settleTransfers(settlement, CHAIN_ID);
    expect(await suspenseOf(second.storeId)).toBe(-X);
    expect(await suspenseOf(first.storeId)).toBe(0n);

    await kit.chain.transfer('USDC', 'merchant:st_a', payer, X);
    await kit.chain.mine(3);
    for (let i = 0; i < 3; i++) await indexChainPass(deps, CHAIN_ID);
    await settleTransfers(settlement, CHAIN_ID);
    expect(await suspenseOf(second.storeId)).toBe(0n);
    expect(await suspenseOf(first.storeId)).toBe(0n);
    const returned = await kit.db.db.execute<{ matched_as: string; store_id: string }>(sql`
      select matched_as, store_id from chain_transfers where from_address = ${kit.merchant.toLowerCase()}`);
    expect(returned.rows).toEqual([{ matched_as: 'payment_returned', store_id: second.storeId }]);
  });
});
