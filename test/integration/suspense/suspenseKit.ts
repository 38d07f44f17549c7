import { sql } from 'drizzle-orm';
import { createManualClock } from '../../../src/clock.ts';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { StoreConfig } from '../../../src/config/stores.ts';
import { balances, trialBalance } from '../../../src/ledger/balances.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * Suspense through the real settlement, without a chain: final transfers are stored as the indexer
 * leaves them (chain_transfers rows), and settleTransfers books them (rule 9 after the grace).
 * One store st_a with a merchant and a custody wallet on chain 31337, USDT of 6 decimals.
 */
export const CHAIN_ID = 31337;
export const USDT = `0x${'a1'.repeat(20)}`;
export const MERCHANT = `0x${'11'.repeat(20)}` as const;
export const CUSTODY = `0x${'22'.repeat(20)}` as const;
export const STRANGER = `0x${'33'.repeat(20)}` as const;
const GRACE = 60_000;

export async function createSuspenseKit(label: string) {
  const db = await createMigratedDatabase(label);
  const registry = createChainRegistry([
    {
      chain_id: CHAIN_ID,
      name: 'test',
      tokens: { USDT: { address: USDT, decimals: 6 } },
      finality: { finalized_tag: false, depth: 2 },
      start_block: 0,
    },
  ]);
  const stores: StoreConfig[] = [
    {
      storeId: 'st_a',
      businessId: 'biz_1',
      apiKey: 'key_a',
      apiSecret: 'secret-a-0123456789',
      signedResponse: false,
      functionalCurrency: 'USD',
      par: new Map(),
      wallets: new Map([[CHAIN_ID, { merchant: MERCHANT, custody: CUSTODY }]]),
    },
  ];
  const accounts = createAccountCache();
  const clock = createManualClock(new Date());
  const deps = { db: db.db, config: { stores, chains: registry }, accounts, clock, unmatchedGraceMs: GRACE };
  let seq = 0;

  /** One final Transfer log of `value` USDT base units, final long enough ago that the grace is over. */
  async function transfer(from: string, to: string, value: bigint): Promise<{ txHash: string; id: string }> {
    const n = ++seq;
    const txHash = `0x${n.toString(16).padStart(64, 'e')}`;
    const block = 1_000 + n;
    await db.db.execute(sql`
      insert into chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token,
                                   from_address, to_address, value, state, source, final_at)
      values (${CHAIN_ID}, ${txHash}, 0, ${block}, ${`0x${block.toString(16).padStart(64, '0')}`},
              now() - interval '1 hour', ${USDT}, ${from.toLowerCase()}, ${to.toLowerCase()}, ${value.toString()},
              'final', 'logs', now() - interval '1 hour')`);
    return { txHash, id: `${CHAIN_ID}:${txHash}:0` };
  }

  /** The settlement, past every grace. */
  function settle() {
    clock.set(new Date(Date.now() + 2 * GRACE));
    return settleTransfers(deps, CHAIN_ID);
  }

  /** Records a CONFIRMED direct payment of `coins` USDT paid by `txHash` into the merchant wallet, as a poll would. */
  async function confirm(id: string, txHash: string, coins: string): Promise<void> {
    const intent = {
      all_svc_checkout_intent_id: id,
      currency: null,
      currency_symbol: null,
      amount_cents: null,
      chain_id: CHAIN_ID,
      amount_coins: coins,
      coin_symbol: 'USDT',
      coin_contract: USDT,
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
      tx_to: MERCHANT,
      actual_paid_amount: coins,
      service_fee_amount: '0',
      net_income_amount: coins,
      payment_method_type: 1,
      accepted_stable_coins: 1,
    } as CheckoutIntent;
    await db.db.transaction((tx) =>
      applyIntentSnapshot(
        tx,
        { chains: registry, accounts, stores },
        { storeId: 'st_a', intent, source: 'poll', observedAt: new Date() },
      ),
    );
  }

  /** The balance of st_a's account of this kind (USDT). */
  async function balance(kind: string): Promise<bigint> {
    let sum = 0n;
    for (const b of await balances(db.db, { storeId: 'st_a' }))
      if (b.code.startsWith(`${kind}:`)) sum += b.balance;
    return sum;
  }

  async function trialIsZero(): Promise<boolean> {
    return (await trialBalance(db.db)).every((l) => l.net === 0n);
  }

  async function findings(transferId: string): Promise<{ kind: string; open: boolean }[]> {
    const { rows } = await db.db.execute<{ kind: string; open: boolean }>(sql`
      select kind, resolved_at is null as open from findings where ref_id = ${transferId} order by id`);
    return rows;
  }

  /** Everything that changes when something is booked or recorded: to prove a refusal changed nothing. */
  async function state() {
    const { rows } = await db.db.execute(sql`
      select (select count(*) from ledger_entries)::int as entries,
             (select count(*) from suspense_classifications)::int as classifications,
             (select count(*) from findings where resolved_at is null)::int as open_findings,
             (select max(last_seen_at)::text from findings) as last_seen`);
    return rows[0];
  }

  return {
    db,
    deps,
    registry,
    stores,
    accounts,
    clock,
    transfer,
    settle,
    confirm,
    balance,
    trialIsZero,
    findings,
    state,
  };
}
