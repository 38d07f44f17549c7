import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../../src/clock.ts';
import { balances, trialBalance } from '../../../src/ledger/balances.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import { proveBalances } from '../../../src/recon/balanceProofs.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { CheckoutStatus } from '../../../src/svc/models/checkoutStatus.ts';
import { CHAIN_ID, createIndexerKit, useStores } from '../chain/indexerKit.ts';

/**
 * Payments in pieces and bundles (docs/accounting.md, rule 2 and "Pieces and bundles"), on a real
 * anvil and PostgreSQL: a proven payment later cancelled and sent back, an intent paid in two
 * transactions (a top-up), and one transfer paying two intents. Rule 2 allocates what it explains;
 * the books are right whichever side learns last. Each scenario has a store (and merchant wallet)
 * of its own, so each balance proof is about that scenario's transfers only.
 */
const kit = await createIndexerKit('payment_pieces');
const clock = createManualClock(new Date());
const GRACE = 60_000;

const STORE_IDS = [
  'st_ret_after',
  'st_ret_before',
  'st_top_before_first',
  'st_top_before_second',
  'st_top_after_first',
  'st_top_after_second',
  'st_top_susp_first',
  'st_top_susp_second',
  'st_top_stranger',
  'st_two_small',
  'st_two_big',
  'st_two_matcher',
] as const;
type StoreId = (typeof STORE_IDS)[number];

await useStores(kit, STORE_IDS);
const deps = kit.deps();
const applyDeps = kit.applyDeps(clock, GRACE);
const merchant = (storeId: StoreId) => kit.chain.wallet(`merchant:${storeId}`);
const payer = (storeId: StoreId) => kit.chain.wallet(`payer:${storeId}`);

for (const storeId of STORE_IDS) await kit.chain.mint('USDT', await payer(storeId), 100_000_000n);

/** The matcher at the wall clock's now (the indexer stamps final_at with it): within the grace. */
function settleNow() {
  clock.set(new Date());
  return settleTransfers(applyDeps, CHAIN_ID);
}

/** The matcher once every grace is over: whatever nothing explains goes to rule 9. */
function settleLate() {
  clock.set(new Date(Date.now() + 2 * GRACE));
  return settleTransfers(applyDeps, CHAIN_ID);
}

/** The payer pays the store's merchant wallet; indexed until final. */
async function pay(storeId: StoreId, amount: bigint): Promise<string> {
  const { txHash } = await kit.chain.transfer('USDT', `payer:${storeId}`, await merchant(storeId), amount);
  await kit.indexUntilFinal(deps);
  return txHash;
}

/** A direct payment confirmed by the service (a poll), naming `txHash`. */
async function confirm(storeId: StoreId, id: string, txHash: string, coins: string): Promise<void> {
  await kit.confirmedIntent(txHash, {
    id,
    coins,
    storeId,
    txTo: await merchant(storeId),
    observedAt: clock.now(),
  });
}

/** The service reports the intent in another status (its stored payload with that status). */
async function observe(id: string, status: number): Promise<void> {
  const { rows } = await kit.db.db.execute<{ raw_payload: CheckoutIntent; store_id: string }>(
    sql`select raw_payload, store_id from checkout_intents where id = ${id}`,
  );
  const intent = { ...rows[0]!.raw_payload, status } as CheckoutIntent;
  await kit.db.db.transaction((tx) =>
    applyIntentSnapshot(
      tx,
      { chains: kit.registry, stores: kit.stores, accounts: kit.accounts },
      { storeId: rows[0]!.store_id, intent, source: 'poll', observedAt: clock.now() },
    ),
  );
}

/** The store's USDT books that matter here, and its merchant wallet's balance proof. */
async function books(storeId: StoreId) {
  const of = async (kind: string) => {
    let sum = 0n;
    for (const b of await balances(kit.db.db, { storeId })) {
      if (b.symbol === 'USDT' && b.code.startsWith(`${kind}:`)) sum += b.balance;
    }
    return sum;
  };
  const address = (await merchant(storeId)).toLowerCase();
  const proof = (
    await proveBalances({
      db: kit.db.db,
      config: { stores: kit.stores, chains: kit.registry },
      rpcs: new Map([[CHAIN_ID, deps.rpc]]),
      clock,
    })
  ).find((p) => p.role === 'merchant' && p.symbol === 'USDT' && p.wallet === address);
  return {
    inTransit: await of('assets:in_transit'),
    suspense: await of('assets:suspense'),
    wallet: await of('assets:wallet'),
    ownerTransfers: await of('equity:owner_transfers'),
    walletMinusBalanceOf: proof?.chainBalance == null ? null : proof.ledgerBalance - proof.chainBalance,
  };
}

async function openFindings(storeId: StoreId): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(
    sql`select kind from findings where store_id = ${storeId} and resolved_at is null order by kind`,
  );
  return rows.map((r) => r.kind);
}

/** The live entries (neither reversed nor reversals) of a store: their kinds, sorted. */
async function liveKinds(storeId: StoreId): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(sql`
    select e.kind from ledger_entries e
    where e.store_id = ${storeId} and e.reverses_entry_id is null
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)
    order by e.kind`);
  return rows.map((r) => r.kind);
}

async function expectBalanced(): Promise<void> {
  for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
}

describe('a payment confirmed and proven, then CANCELED and sent back to its payer', () => {
  it.each([
    ['the return is final after the CANCELED is seen', 'st_ret_after'],
    ['the return is final before the CANCELED is seen (booked as an owner transfer first)', 'st_ret_before'],
  ] as const)(
    'behavior: the return clears the suspense rule 4 put the proven money in; no owner transfer, when %s',
    async (_name, storeId) => {
      const X = 25_000_000n;
      const id = `ci_${storeId}`;
      const paid = await pay(storeId, X);
      await confirm(storeId, id, paid, '25');
      await settleNow();
      const sendBack = async () => {
        await kit.chain.transfer('USDT', `merchant:${storeId}`, await payer(storeId), X);
        await kit.indexUntilFinal(deps);
      };
      if (storeId === 'st_ret_after') {
        await observe(id, CheckoutStatus.CANCELED);
        await sendBack();
        await settleNow();
      } else {
        await sendBack();
        await settleLate();
        await observe(id, CheckoutStatus.CANCELED);
      }
      await settleLate();

      expect(await books(storeId)).toEqual({
        inTransit: 0n,
        suspense: 0n,
        wallet: 0n,
        ownerTransfers: 0n,
        walletMinusBalanceOf: 0n,
      });
      expect(await liveKinds(storeId)).toEqual([
        'chain.payment_proven',
        'chain.payment_returned',
        'checkout.proven_reversed',
      ]);
      // The failure itself is still for a person; the money's story is complete.
      expect(await openFindings(storeId)).toEqual(['confirmed_then_failed']);
      expect(await settleLate()).toEqual({ applied: 0, deferred: 0, unwound: 0 });
      await expectBalanced();
    },
  );
});

describe('an intent paid directly in two transactions: 10, then a top-up of 15 (the service confirms 25)', () => {
  it.each([
    ['both final before the confirmation, which names the first', 'st_top_before_first', 'before', 0],
    ['both final before the confirmation, which names the top-up', 'st_top_before_second', 'before', 1],
    ['the top-up final after the confirmation (named: the first)', 'st_top_after_first', 'after', 0],
    ['the first final after the confirmation (named: the top-up)', 'st_top_after_second', 'after', 1],
    [
      'both in rule-9 suspense before the confirmation (named: the first)',
      'st_top_susp_first',
      'suspense',
      0,
    ],
    [
      'both in rule-9 suspense before the confirmation (named: the top-up)',
      'st_top_susp_second',
      'suspense',
      1,
    ],
  ] as const)(
    'behavior: both transfers prove the intent; in_transit and suspense hold nothing, no amount mismatch: %s',
    async (_name, storeId, order, named) => {
      const id = `ci_${storeId}`;
      const amounts = [10_000_000n, 15_000_000n] as const;
      if (order === 'after') {
        // The named one is final and proven first; the other comes later.
        const first = await pay(storeId, amounts[named]);
        await confirm(storeId, id, first, '25');
        await settleNow();
        await pay(storeId, amounts[1 - named]!);
        await settleNow();
        await settleLate();
      } else {
        const hashes = [await pay(storeId, amounts[0]), await pay(storeId, amounts[1])];
        if (order === 'suspense') {
          await settleLate();
          expect(await books(storeId)).toMatchObject({ suspense: -25_000_000n });
        }
        await confirm(storeId, id, hashes[named]!, '25');
        await settleNow();
        await settleLate();
      }

      expect(await books(storeId)).toEqual({
        inTransit: 0n,
        suspense: 0n,
        wallet: 25_000_000n,
        ownerTransfers: 0n,
        walletMinusBalanceOf: 0n,
      });
      expect(await openFindings(storeId)).toEqual([]);
      expect(await settleLate()).toEqual({ applied: 0, deferred: 0, unwound: 0 });
      await expectBalanced();
    },
  );

  it("behavior: a stranger's transfer that does not complete N exactly is not taken: the named 10 is booked with a mismatch, 14 goes to suspense", async () => {
    const storeId = 'st_top_stranger';
    const id = `ci_${storeId}`;
    const named = await pay(storeId, 10_000_000n);
    await pay(storeId, 14_000_000n);
    await confirm(storeId, id, named, '25');
    await settleLate();
    expect(await books(storeId)).toEqual({
      inTransit: 15_000_000n,
      suspense: -14_000_000n,
      wallet: 24_000_000n,
      ownerTransfers: 0n,
      walletMinusBalanceOf: 0n,
    });
    expect(await openFindings(storeId)).toEqual(['payment_amount_mismatch', 'unmatched_transfer_in']);
    await expectBalanced();
  });
});

describe('one transfer of 35 paying two intents (10 and 25), both confirmed naming it', () => {
  it.each([
    ['the 10 confirmed first, the transfer final before', 'st_two_small'],
    ['the 25 confirmed first, the transfer final before', 'st_two_big'],
    ['both confirmed before the transfer is final (the matcher proves both)', 'st_two_matcher'],
  ] as const)(
    'behavior: the log is split, 10 to one intent and 25 to the other, each its own proof; a reorg reverses each once: %s',
    async (_name, storeId) => {
      const small = `ci_${storeId}_10`;
      const big = `ci_${storeId}_25`;
      let hash: string;
      if (storeId === 'st_two_matcher') {
        // The hash is known before it is mined: anvil mines the transfer at once, so confirm after
        // mining but before indexing.
        const sent = await kit.chain.transfer(
          'USDT',
          `payer:${storeId}`,
          await merchant(storeId),
          35_000_000n,
        );
        hash = sent.txHash;
        await confirm(storeId, small, hash, '10');
        await confirm(storeId, big, hash, '25');
        await kit.indexUntilFinal(deps);
        await settleNow();
      } else {
        hash = await pay(storeId, 35_000_000n);
        const [first, second] =
          storeId === 'st_two_small'
            ? ([
                [small, '10'],
                [big, '25'],
              ] as const)
            : ([
                [big, '25'],
                [small, '10'],
              ] as const);
        await confirm(storeId, first[0], hash, first[1]);
        await confirm(storeId, second[0], hash, second[1]);
        await settleNow();
      }
      await settleLate();

      expect(await books(storeId)).toEqual({
        inTransit: 0n,
        suspense: 0n,
        wallet: 35_000_000n,
        ownerTransfers: 0n,
        walletMinusBalanceOf: 0n,
      });
      expect(await liveKinds(storeId)).toEqual([
        'chain.payment_proven',
        'chain.payment_proven',
        'checkout.confirmed',
        'checkout.confirmed',
      ]);
      expect(await openFindings(storeId)).toEqual([]);
      expect(await settleLate()).toEqual({ applied: 0, deferred: 0, unwound: 0 });

      // A reorg orphans the transfer (as the indexer leaves its row): each proof is reversed once.
      await kit.db.db.execute(sql`update chain_transfers set state = 'orphaned' where tx_hash = ${hash}`);
      expect(await settleLate()).toMatchObject({ unwound: 1 });
      expect(await books(storeId)).toMatchObject({ inTransit: 35_000_000n, suspense: 0n, wallet: 0n });
      expect(await liveKinds(storeId)).toEqual(['checkout.confirmed', 'checkout.confirmed']);
      await expectBalanced();
    },
  );
});
