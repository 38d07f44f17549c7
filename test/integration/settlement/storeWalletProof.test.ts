import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../../src/clock.ts';
import { balances, trialBalance } from '../../../src/ledger/balances.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * Rule 2 proves a payment only into a merchant wallet of the intent's own store (STORES_FILE), and
 * books rule 1 and rule 2 to the same store: the intent row's. The kit has two stores, st_a and
 * st_b, each with a merchant wallet of its own on the chain. The transfers are stored rows, as the
 * indexer leaves them.
 */
const kit = await createIndexerKit('store_wallet_proof');
const clock = createManualClock(new Date());
const GRACE = 60_000;
const applyDeps = kit.applyDeps(clock, GRACE);
const walletA = kit.merchant.toLowerCase() as `0x${string}`;
const walletB = (await kit.chain.wallet('merchant:st_b')).toLowerCase() as `0x${string}`;
const X = 25_000_000n;
let seq = 0;

function txHashOf(n: number): string {
  return `0x${n.toString(16).padStart(64, 'c')}`;
}

/** One final Transfer log of X USDT from a buyer into `to`. */
async function storeLog(txHash: string, to: string): Promise<void> {
  const block = 2_000 + seq++;
  await kit.db.db.execute(sql`
    insert into chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token,
                                 from_address, to_address, value, state, source, final_at)
    values (${CHAIN_ID}, ${txHash}, 0, ${block}, ${`0x${block.toString(16).padStart(64, '0')}`}, now(),
            ${kit.chain.tokens.USDT.address.toLowerCase()}, ${`0x${'66'.repeat(20)}`}, ${to}, ${X.toString()},
            'final', 'logs', now())`);
}

async function row(txHash: string) {
  const { rows } = await kit.db.db.execute<{
    matched_as: string | null;
    matched_ref: string | null;
    store_id: string | null;
  }>(sql`select matched_as, matched_ref, store_id from chain_transfers where tx_hash = ${txHash}`);
  return rows[0];
}

/** The entries about an intent or its transfer, as kind and store. */
async function entries(intentId: string, txHash: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string; store_id: string }>(sql`
    select kind, store_id from ledger_entries
    where ref_id = ${intentId} or ref_id like ${`${CHAIN_ID}:${txHash}:%`} order by id`);
  return rows.map((r) => `${r.kind} ${r.store_id}`);
}

async function openFindings(intentId: string, txHash: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string; store_id: string | null }>(sql`
    select kind, store_id from findings
    where resolved_at is null and (ref_id = ${intentId} or ref_id like ${`${CHAIN_ID}:${txHash}:%`})
    order by kind`);
  return rows.map((r) => `${r.kind} ${r.store_id}`);
}

async function usdt(storeId: string, kind: string): Promise<bigint> {
  let sum = 0n;
  for (const b of await balances(kit.db.db, { storeId })) {
    if (b.symbol === 'USDT' && b.code.startsWith(`${kind}:`)) sum += b.balance;
  }
  return sum;
}

async function snapshot() {
  return {
    aWallet: await usdt('st_a', 'assets:wallet'),
    aInTransit: await usdt('st_a', 'assets:in_transit'),
    bWallet: await usdt('st_b', 'assets:wallet'),
    bSuspense: await usdt('st_b', 'assets:suspense'),
  };
}

describe("rule 2 and the intent's own store", () => {
  it.each([
    ['the matcher (the transfer is final after the confirmation)', 'matcher'],
    ['the confirmation (the transfer went to suspense before)', 'intent'],
  ])(
    "error: an intent of st_a whose tx_to and payment are st_b's merchant wallet is not proven, proven by %s: a finding, and the transfer is st_b's rule 9",
    async (_name, last) => {
      const hash = txHashOf(seq++);
      const before = await snapshot();
      let intent = '';
      if (last === 'matcher') {
        intent = await kit.confirmedIntent(hash, { txTo: walletB, observedAt: clock.now() });
        await storeLog(hash, walletB);
        clock.set(new Date());
        // Within the grace: the payment proves nothing, so it waits for another explanation.
        expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 1, unwound: 0 });
        clock.advance(2 * GRACE);
        expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 1, deferred: 0, unwound: 0 });
      } else {
        await storeLog(hash, walletB);
        clock.set(new Date(Date.now() + 2 * GRACE));
        expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 1, deferred: 0, unwound: 0 });
        intent = await kit.confirmedIntent(hash, { txTo: walletB, observedAt: clock.now() });
      }
      // No rule 2: st_a's rule 1 waits in in_transit, st_b holds the money in suspense.
      expect(await entries(intent, hash)).toEqual([
        ...(last === 'intent' ? ['chain.transfer_in_unmatched st_b'] : []),
        'checkout.confirmed st_a',
        ...(last === 'matcher' ? ['chain.transfer_in_unmatched st_b'] : []),
      ]);
      expect(await row(hash)).toEqual({
        matched_as: 'transfer_in_unmatched',
        matched_ref: null,
        store_id: 'st_b',
      });
      const after = await snapshot();
      expect(after.aWallet - before.aWallet).toBe(0n);
      expect(after.aInTransit - before.aInTransit).toBe(X);
      expect(after.bWallet - before.bWallet).toBe(X);
      expect(after.bSuspense - before.bSuspense).toBe(-X);
      expect(await openFindings(intent, hash)).toEqual([
        'recipient_not_store_wallet st_a',
        'unmatched_transfer_in st_b',
      ]);
      // Nothing more from either side.
      expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 0, unwound: 0 });
      await kit.confirmedIntent(hash, { id: intent, txTo: walletB, observedAt: clock.now() });
      expect(await entries(intent, hash)).toHaveLength(2);
      for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
    },
  );

  it("behavior: an intent of st_a read with st_b's key books rule 1 to st_a, beside its rule 2", async () => {
    const hash = txHashOf(seq++);
    const id = `ci_read_by_b_${seq}`;
    // Tracked by st_a: the row is st_a's.
    await kit.db.db.execute(sql`
      insert into checkout_intents (id, store_id, status, tracked_via) values (${id}, 'st_a', 1, 'api')`);
    await storeLog(hash, walletA);
    const before = await snapshot();
    await kit.confirmedIntent(hash, { id, storeId: 'st_b', observedAt: clock.now() });
    expect(await entries(id, hash)).toEqual(['checkout.confirmed st_a', 'chain.payment_proven st_a']);
    const after = await snapshot();
    expect(after.aInTransit - before.aInTransit).toBe(0n);
    expect(after.aWallet - before.aWallet).toBe(X);
    expect(await usdt('st_b', 'income:sales')).toBe(0n);
    expect(await usdt('st_b', 'assets:in_transit')).toBe(0n);
  });
});
