import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { applyChainTransfers } from '../../../src/chain/applyChainTransfers.ts';
import { createManualClock } from '../../../src/clock.ts';
import { balances, trialBalance } from '../../../src/ledger/balances.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { CHAIN_ID, createIndexerKit } from './indexerKit.ts';

/**
 * One transaction with several Transfer logs into the merchant wallet: a payer settling two
 * intents in one batch transaction, or paying the wallet twice. Each intent is proven by the log
 * of its own amount, and a log that proves nothing is booked (rule 9) instead of waiting for ever.
 * The transfers are stored rows, as the indexer leaves them (the matcher reads only the database).
 */
const kit = await createIndexerKit('batch_payments');
const clock = createManualClock(new Date());
const GRACE = 60_000;
const applyDeps = kit.applyDeps(clock, GRACE);
const USDT = kit.chain.tokens.USDT.address.toLowerCase();
const merchant = kit.merchant.toLowerCase();
let seq = 0;

/** Records a CONFIRMED direct payment of `coins` USDT (no fee) paid by `txHash`. */
async function confirmedIntent(txHash: string, coins: string): Promise<string> {
  const id = `intent-batch-${seq++}`;
  const intent = {
    all_svc_checkout_intent_id: id,
    currency: null,
    currency_symbol: null,
    amount_cents: null,
    chain_id: CHAIN_ID,
    amount_coins: coins,
    coin_symbol: 'USDT',
    coin_contract: kit.chain.tokens.USDT.address,
    currency_rate: null,
    status: 20,
    order_id: null,
    order_description: null,
    user_id: null,
    user_name: null,
    error_message: null,
    tx_hash: txHash,
    tx_hash_2: null,
    tx_from: null,
    tx_to: kit.merchant,
    actual_paid_amount: coins,
    service_fee_amount: '0',
    net_income_amount: coins,
    payment_method_type: 1,
    accepted_stable_coins: 1,
  } as CheckoutIntent;
  await kit.db.db.transaction((tx) =>
    applyIntentSnapshot(
      tx,
      { chains: kit.registry, accounts: kit.accounts },
      { storeId: 'st_a', intent, source: 'poll', observedAt: clock.now() },
    ),
  );
  return id;
}

/** Final Transfer logs of one transaction into the merchant wallet, in log order. */
async function storeLogs(txHash: string, values: bigint[]): Promise<void> {
  const block = 1_000 + seq++;
  for (const [logIndex, value] of values.entries()) {
    await kit.db.db.execute(sql`
      insert into chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token,
                                   from_address, to_address, value, state, source, final_at)
      values (${CHAIN_ID}, ${txHash}, ${logIndex}, ${block}, ${`0x${block.toString(16).padStart(64, '0')}`}, now(),
              ${USDT}, ${`0x${'77'.repeat(20)}`}, ${merchant}, ${value.toString()}, 'final', 'logs', now())`);
  }
}

function txHashOf(n: number): string {
  return `0x${n.toString(16).padStart(64, 'e')}`;
}

async function matched(txHash: string) {
  const { rows } = await kit.db.db.execute<{
    log_index: number;
    matched_as: string | null;
    matched_ref: string | null;
  }>(
    sql`select log_index, matched_as, matched_ref from chain_transfers where tx_hash = ${txHash} order by log_index`,
  );
  return rows;
}

async function openFindings(): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(
    sql`select kind from findings where resolved_at is null order by kind`,
  );
  return rows.map((r) => r.kind);
}

async function usdt(kind: string): Promise<bigint> {
  let sum = 0n;
  for (const b of await balances(kit.db.db, { storeId: 'st_a' })) {
    if (b.symbol === 'USDT' && b.code.startsWith(`${kind}:`)) sum += b.balance;
  }
  return sum;
}

describe('one transaction, several transfers into the merchant wallet', () => {
  it.each([
    ['the matcher (the transfers are final after the confirmations)', 'matcher'],
    ['the confirmations (the transfers were final before)', 'intents'],
  ])(
    'behavior: two intents paid by one transaction are each proven by the log of their own amount, proven by %s',
    async (_name, last) => {
      const hash = txHashOf(seq++);
      const walletBefore = await usdt('assets:wallet');
      // The smaller payment's log comes first: taking the first log would prove the wrong intent.
      const logs = [10_000_000n, 25_000_000n];
      if (last === 'intents') await storeLogs(hash, logs);
      const big = await confirmedIntent(hash, '25');
      const small = await confirmedIntent(hash, '10');
      if (last === 'matcher') await storeLogs(hash, logs);
      clock.set(new Date());
      // (The matcher proves both intents while on the first log: it may count one row applied.)
      expect(await applyChainTransfers(applyDeps, CHAIN_ID)).toMatchObject({ deferred: 0, unwound: 0 });
      expect(await matched(hash)).toEqual([
        { log_index: 0, matched_as: 'payment_proof', matched_ref: small },
        { log_index: 1, matched_as: 'payment_proof', matched_ref: big },
      ]);
      expect(await usdt('assets:in_transit')).toBe(0n);
      expect(await usdt('assets:wallet')).toBe(walletBefore + 35_000_000n);
      expect(await openFindings()).toEqual([]);
      // Nothing more to do, from either side.
      expect(await applyChainTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 0, unwound: 0 });
    },
  );

  it('behavior: a second transfer in the paying transaction proves nothing: it waits the grace, then goes to suspense', async () => {
    const hash = txHashOf(seq++);
    const paid = await confirmedIntent(hash, '25');
    await storeLogs(hash, [25_000_000n, 3_000_000n]);
    const walletBefore = await usdt('assets:wallet');
    clock.set(new Date());
    expect(await applyChainTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 1, deferred: 1, unwound: 0 });
    clock.advance(2 * GRACE);
    expect(await applyChainTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 1, deferred: 0, unwound: 0 });
    expect(await matched(hash)).toEqual([
      { log_index: 0, matched_as: 'payment_proof', matched_ref: paid },
      { log_index: 1, matched_as: 'transfer_in_unmatched', matched_ref: null },
    ]);
    expect(await usdt('assets:in_transit')).toBe(0n);
    expect(await usdt('assets:suspense')).toBe(-3_000_000n);
    expect(await usdt('assets:wallet')).toBe(walletBefore + 28_000_000n);
    expect(await openFindings()).toEqual(['unmatched_transfer_in']);
    for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
  });
});
