import { sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { DomainContext } from '../../../src/context/domainContext.ts';
import { processInboxBatch } from '../../../src/inbox/processInboxBatch.ts';
import { accountCode } from '../../../src/ledger/accounts.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import type { SvcClient } from '../../../src/svc/client.ts';
import { type CheckoutIntent, checkoutIntentSchema } from '../../../src/svc/models/checkoutIntent.ts';
import { captureLogger } from '../../helpers/captureLogger.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * A webhook batch takes its intents' row locks before it books anything (found by the
 * simulator's two workers, seed 59 after seed 58): booking the first intent creates ledger
 * accounts, and a batch that then waited for its second intent's row, held by a transaction that
 * was about to create the same account, deadlocked with it. PostgreSQL broke the cycle by failing
 * the batch, which then fell back to one webhook at a time.
 */
const { url, db } = await createMigratedDatabase('batchlockorder');
const registry = createChainRegistry();
const usdt = registry.tokenBySymbol(1, 'USDT');
if (!usdt) throw new Error('the default registry has no USDT on chain 1');
const [first, second] = ['aaaa0000000000000000aa01', 'ffff0000000000000000ff02'];
const merchant = `0x${'11'.repeat(20)}` as const;

function confirmed(id: string): CheckoutIntent {
  return checkoutIntentSchema.parse({
    all_svc_checkout_intent_id: id,
    currency: null,
    currency_symbol: null,
    amount_cents: null,
    chain_id: 1,
    amount_coins: '25',
    coin_symbol: 'USDT',
    coin_contract: usdt?.address,
    currency_rate: null,
    status: 20,
    order_id: `order-${id}`,
    order_description: null,
    user_id: null,
    user_name: null,
    error_message: null,
    tx_hash: `0x${id.slice(0, 2).repeat(32)}`,
    tx_hash_2: null,
    tx_from: `0x${'22'.repeat(20)}`,
    tx_to: merchant,
    actual_paid_amount: '25',
    service_fee_amount: '0.25',
    net_income_amount: '24.75',
    payment_method_type: 1,
    accepted_stable_coins: null,
  });
}

async function storeWebhook(intent: CheckoutIntent): Promise<string> {
  const webhookId = `wh_${intent.all_svc_checkout_intent_id}`;
  const body = {
    all_svc_transaction_id: `txn-${intent.all_svc_checkout_intent_id}`,
    all_svc_checkout_intent_id: intent.all_svc_checkout_intent_id,
    webhook_id: webhookId,
    amount_cents: 2500,
    amount_coins: '25',
    coin_contract_address: intent.coin_contract,
    coin_symbol: 'USDT',
    chain_id: 1,
    tx_hash: intent.tx_hash,
    tx_from: intent.tx_from,
    payment_method_type: 1,
    status: 20,
    actual_paid_amount: '25',
  };
  await db.execute(sql`
    insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body)
    values (${webhookId}, 'st_a', 'checkout', 'received', '{}'::jsonb, ${Buffer.from(JSON.stringify(body))})`);
  return webhookId;
}

describe('webhook batch lock order', () => {
  it('behavior: a batch waits for an intent another transaction holds before it creates any account, so that transaction can create the same account and no deadlock fails the batch', async () => {
    const intents = new Map([first, second].map((id) => [id, confirmed(id)]));
    const client = {
      getCheckoutIntent: async (id: string) => intents.get(id) as CheckoutIntent,
    } as unknown as SvcClient;
    const { logger, lines } = captureLogger({ level: 'warn' });
    const deps: DomainContext = {
      db,
      chains: registry,
      stores: [{ storeId: 'st_a', wallets: new Map([[1, { merchant, custody: `0x${'33'.repeat(20)}` }]]) }],
      accounts: createAccountCache(),
      encryptionKey: Buffer.alloc(32),
      client: () => client,
      clock: { now: () => new Date() },
      logger,
    };
    // The second intent is tracked already; another transaction holds its row.
    await db.execute(sql`
      insert into checkout_intents (id, store_id, tracked_via, tracked_at) values (${second}, 'st_a', 'cli', now())`);
    const webhooks = [
      await storeWebhook(intents.get(first) as CheckoutIntent),
      await storeWebhook(intents.get(second) as CheckoutIntent),
    ];
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from checkout_intents where id = $1 for update', [second]);
      const batch = processInboxBatch(deps, webhooks);
      // The batch waits for the held row...
      const waiting = async () => {
        const { rows } = await holder.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
        );
        return rows[0]?.n ?? 0;
      };
      for (let i = 0; i < 100 && (await waiting()) === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(await waiting()).toBe(1);
      // ...while the holder creates an account the batch's first booking needs, then commits.
      const code = accountCode({ kind: 'assets:in_transit', storeId: 'st_a', token: usdt });
      await holder.query(
        `insert into ledger_accounts (code, type, store_id, chain_id, token, symbol, decimals)
         values ($1, 'asset', 'st_a', 1, $2, 'USDT', 6) on conflict (code) do nothing`,
        [code, usdt.address.toLowerCase()],
      );
      await holder.query('commit');
      const results = await batch;
      expect(results.map((r) => r.ok)).toEqual([true, true]);
    } finally {
      await holder.end();
    }
    // One transaction booked both payments: the batch was never failed and retried one by one.
    const { rows } = await db.execute<{ n: number; entries: number }>(sql`
      select count(distinct tx_id)::int as n, count(*)::int as entries
      from ledger_entries where kind = 'checkout.confirmed'`);
    expect(rows[0]).toEqual({ n: 1, entries: 2 });
    expect(lines.join('\n')).not.toContain('deadlock');
  }, 30_000);
});
