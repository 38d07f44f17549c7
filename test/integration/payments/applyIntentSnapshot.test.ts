import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import { recordFinding } from '../../../src/findings/recordFinding.ts';
import { trialBalance } from '../../../src/ledger/balances.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import { paymentProven } from '../../../src/ledger/rules/chainTransferRules.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import { proveIntentPayment } from '../../../src/payments/proveIntentPayment.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { checkoutWebhookPayloadSchema } from '../../../src/svc/models/checkoutWebhook.ts';
import { BASE_USDC, confirmedIntent, TEST_MERCHANT } from '../../helpers/confirmedIntent.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

const { db } = await createMigratedDatabase('apply_intent');
const USDC = BASE_USDC;
const chains = createChainRegistry();
const MERCHANT = TEST_MERCHANT;
/** st_a's wallets on Base (and chain 999, below): tx_to of the intents below is its merchant wallet. */
const wallets = { merchant: MERCHANT, custody: `0x${'cc'.repeat(20)}` as const };
const stores = [
  {
    storeId: 'st_a',
    wallets: new Map([
      [8453, wallets],
      [999, wallets],
    ]),
  },
];
const deps = { chains, stores, accounts: createAccountCache() };

const intent = confirmedIntent;

/** The service's checkout webhook for intent `id` (25 USDC paid on Base), as the model parses it. */
function webhookOf(id: string, n: number, patch: Record<string, unknown> = {}) {
  return checkoutWebhookPayloadSchema.parse({
    all_svc_transaction_id: `t${n}`,
    all_svc_checkout_intent_id: id,
    webhook_id: `wh-${n}`,
    amount_cents: 2500,
    amount_coins: '25',
    coin_contract_address: USDC,
    coin_symbol: 'USDC',
    chain_id: 8453,
    tx_hash: `0x${'1'.repeat(64)}`,
    tx_from: `0x${'cd'.repeat(20)}`,
    payment_method_type: 1,
    status: 20,
    ...patch,
  });
}

const at = (s: number) => new Date(Date.UTC(2026, 10, 20, 12, 0, s));

/** One poll's observation of intent `id`, applied in its own transaction. */
function poll(id: string, patch: Partial<CheckoutIntent>, s: number) {
  return db.transaction((tx) =>
    applyIntentSnapshot(tx, deps, {
      storeId: 'st_a',
      intent: intent(id, patch),
      source: 'poll',
      observedAt: at(s),
    }),
  );
}

async function entriesOf(id: string) {
  const { rows } = await db.execute<{ kind: string; lines: string[] }>(sql`
    select e.kind, array_agg(a.code || ' ' || p.amount::text order by a.code) as lines
    from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
    where e.ref_id = ${id} group by e.id, e.kind order by e.id`);
  return rows;
}

async function findingsOf(id: string) {
  const { rows } = await db.execute<{ kind: string }>(
    sql`select kind from findings where ref_id = ${id} order by kind`,
  );
  return rows.map((r) => r.kind);
}

/** Waits until a backend waits for a lock (the second observer of intent `id` on its row). */
async function waitForLockWait(id: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await db.execute(sql`
      select 1 from pg_stat_activity
      where wait_event_type = 'Lock' and datname = current_database() and query like '%checkout_intents%'`);
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no observer of ${id} waited for its row lock`);
}

describe('applyIntentSnapshot', () => {
  it('behavior: CONFIRMED posts rule 1 once, whether seen by poll, webhook or both, in any order', async () => {
    const id = 'aa0000000000000000000001';
    const webhook = webhookOf(id, 1, { actual_paid_amount: '25' });
    const first = await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id),
        source: 'poll',
        observedAt: at(1),
      }),
    );
    expect(first.posted?.created).toBe(true);
    // Later observations (a webhook five times, then another poll) change nothing.
    for (let i = 0; i < 5; i++) {
      const again = await db.transaction((tx) =>
        applyIntentSnapshot(tx, deps, {
          storeId: 'st_a',
          intent: intent(id),
          source: 'webhook',
          observedAt: at(10 + i),
          webhook,
        }),
      );
      expect(again.posted).toEqual({ id: first.posted!.id, created: false });
    }
    expect(await entriesOf(id)).toEqual([
      {
        kind: 'checkout.confirmed',
        lines: [
          'assets:in_transit:st_a:8453:USDC 24750000',
          'expense:service_fees:st_a:8453:USDC 250000',
          'income:sales:st_a:8453:USDC -25000000',
        ],
      },
    ]);
    const history = await db.execute(
      sql`select from_status, to_status, source from checkout_intent_status_history where intent_id = ${id}`,
    );
    expect(history.rows).toEqual([{ from_status: null, to_status: 20, source: 'poll' }]);
    expect(await findingsOf(id)).toEqual([]);
  });

  it('behavior: under- and overpayment post shortfall and overpayment lines', async () => {
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent('aa0000000000000000000002', {
          actual_paid_amount: '20',
          service_fee_amount: '0.2',
          net_income_amount: '19.8',
        }),
        source: 'poll',
        observedAt: at(2),
      }),
    );
    expect((await entriesOf('aa0000000000000000000002'))[0]?.lines).toContain(
      'expense:sales_shortfall:st_a:8453:USDC 5000000',
    );
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent('aa0000000000000000000003', {
          actual_paid_amount: '30',
          service_fee_amount: '0',
          net_income_amount: '30',
          tx_hash_2: null,
        }),
        source: 'poll',
        observedAt: at(3),
      }),
    );
    expect((await entriesOf('aa0000000000000000000003'))[0]?.lines).toContain(
      'liability:customer_overpayments:st_a:8453:USDC -5000000',
    );
    expect(await findingsOf('aa0000000000000000000003')).toContain('overpaid');
  });

  it('behavior: concurrent observers of one intent post one entry', async () => {
    const id = 'aa0000000000000000000004';
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        db.transaction((tx) =>
          applyIntentSnapshot(tx, deps, {
            storeId: 'st_a',
            intent: intent(id),
            source: 'poll',
            observedAt: at(i),
          }),
        ),
      ),
    );
    expect(results.filter((r) => r.posted?.created)).toHaveLength(1);
    expect(await entriesOf(id)).toHaveLength(1);
  });

  it('behavior: fee arithmetic that does not add up posts nothing and is a finding', async () => {
    const id = 'aa0000000000000000000005';
    const r = await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id, { net_income_amount: '24.70' }),
        source: 'poll',
        observedAt: at(5),
      }),
    );
    expect(r.posted).toBeNull();
    expect(await entriesOf(id)).toEqual([]);
    expect(await findingsOf(id)).toEqual(['fee_arithmetic_mismatch']);
  });

  it('behavior: a token that is not accepted is never a payment', async () => {
    const id = 'aa0000000000000000000006';
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id, { coin_contract: `0x${'99'.repeat(20)}` }),
        source: 'poll',
        observedAt: at(6),
      }),
    );
    expect(await entriesOf(id)).toEqual([]);
    expect(await findingsOf(id)).toEqual(['unknown_token']);
  });

  it('behavior: not-yet-paid and failed states post nothing; a failure after CONFIRMED reverses it', async () => {
    const id = 'aa0000000000000000000007';
    const created = intent(id, {
      status: 1,
      actual_paid_amount: null,
      service_fee_amount: null,
      net_income_amount: null,
      tx_hash: null,
      tx_hash_2: null,
    });
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: created,
        source: 'create',
        observedAt: at(7),
      }),
    );
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: { ...created, status: -5 },
        source: 'poll',
        observedAt: at(8),
      }),
    );
    expect(await entriesOf(id)).toEqual([]);

    const id2 = 'aa0000000000000000000008';
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id2),
        source: 'poll',
        observedAt: at(9),
      }),
    );
    const failed = await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id2, { status: -1 }),
        source: 'poll',
        observedAt: at(10),
      }),
    );
    expect(failed.reversed?.created).toBe(true);
    expect((await entriesOf(id2)).map((e) => e.kind)).toEqual([
      'checkout.confirmed',
      'checkout.confirmed.reversal',
    ]);
    expect(await findingsOf(id2)).toEqual(['confirmed_then_failed']);
  });

  it('behavior: a stale CONFIRMED read after the intent was reversed to CANCELED changes nothing', async () => {
    const id = 'aa0000000000000000000016';
    await poll(id, {}, 100);
    await poll(id, { status: -4 }, 200);
    // A poll that read CONFIRMED before the cancel was recorded, applied after it.
    const stale = await poll(id, {}, 150);
    expect(stale).toMatchObject({ previousStatus: -4, status: -4, posted: null });
    const { rows } = await db.execute<{ status: number }>(
      sql`select status from checkout_intents where id = ${id}`,
    );
    expect(rows).toEqual([{ status: -4 }]);
    expect((await entriesOf(id)).map((e) => e.kind)).toEqual([
      'checkout.confirmed',
      'checkout.confirmed.reversal',
    ]);
    expect(await findingsOf(id)).toEqual(['confirmed_then_failed']);
  });

  it('behavior: a poll reading a terminal status the intent already left (a lagging replica) changes nothing (sim seed 52968)', async () => {
    const id = 'aa0000000000000000000052';
    await poll(id, {}, 400);
    await poll(id, { status: -4 }, 410);
    // The service confirms again and pushes it.
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id),
        source: 'webhook',
        observedAt: at(420),
      }),
    );
    // A later poll answered from a replica still at the cancel.
    const lagged = await poll(id, { status: -4 }, 430);
    expect(lagged).toMatchObject({ previousStatus: 20, status: 20, reversed: null });
    const { rows } = await db.execute<{ status: number }>(
      sql`select status from checkout_intents where id = ${id}`,
    );
    expect(rows).toEqual([{ status: 20 }]);
    expect((await entriesOf(id)).map((e) => e.kind)).toEqual([
      'checkout.confirmed',
      'checkout.confirmed.reversal',
      'checkout.confirmed',
    ]);
    // A terminal status the intent never had is still applied from a poll.
    expect(await poll(id, { status: -2 }, 440)).toMatchObject({ previousStatus: 20, status: -2 });
  });

  it('behavior: CONFIRMED again after a failure books rule 1 anew (:r1) with a critical finding; a second failure reverses it', async () => {
    const id = 'aa0000000000000000000017';
    const sales = async () => {
      const { rows } = await db.execute<{ net: string }>(sql`
        select coalesce(sum(p.amount), 0)::text as net from ledger_postings p
        join ledger_entries e on e.id = p.entry_id join ledger_accounts a on a.id = p.account_id
        where e.ref_id = ${id} and a.code like 'income:sales:%'`);
      return BigInt(rows[0]?.net ?? '0');
    };
    await poll(id, {}, 300);
    await poll(id, { status: -4 }, 310);
    expect(await sales()).toBe(0n);

    const again = await poll(id, {}, 320);
    expect(again.posted?.created).toBe(true);
    expect(await sales()).toBe(-25_000_000n);
    const keys = await db.execute<{ idempotency_key: string; occurred_at: Date }>(sql`
      select idempotency_key, occurred_at from ledger_entries where ref_id = ${id} and kind = 'checkout.confirmed' order by id`);
    expect(keys.rows.map((r) => r.idempotency_key)).toEqual([
      `checkout:confirmed:${id}`,
      `checkout:confirmed:${id}:r1`,
    ]);
    // Dated when the new confirmation was learnt, not backdated to the first one.
    expect(new Date(keys.rows[1]!.occurred_at)).toEqual(at(320));
    expect(await findingsOf(id)).toEqual(['confirmed_then_failed', 'terminal_status_changed']);

    // Seen again: a replay of the live revision, nothing new.
    expect((await poll(id, {}, 330)).posted).toEqual({ id: again.posted!.id, created: false });
    const refused = await poll(id, { status: -2 }, 340);
    expect(refused.reversed?.created).toBe(true);
    expect(await sales()).toBe(0n);
    expect((await entriesOf(id)).map((e) => e.kind)).toEqual([
      'checkout.confirmed',
      'checkout.confirmed.reversal',
      'checkout.confirmed',
      'checkout.confirmed.reversal',
    ]);
  });

  it('behavior: CANCELED after a proven payment moves the proven money to suspense; CONFIRMED again brings it back to the sale', async () => {
    const id = 'aa0000000000000000000034';
    const sweep = `0x${'e4'.repeat(32)}`;
    const N = 24_750_000n;
    const balance = async (kind: string) => {
      const { rows } = await db.execute<{ net: string }>(sql`
        select coalesce(sum(p.amount), 0)::text as net from ledger_postings p
        join ledger_entries e on e.id = p.entry_id join ledger_accounts a on a.id = p.account_id
        where e.ref_id = ${id} and a.code like ${`${kind}:%`}`);
      return BigInt(rows[0]?.net ?? '0');
    };
    const books = async () => ({
      in_transit: await balance('assets:in_transit'),
      wallet: await balance('assets:wallet'),
      suspense: await balance('assets:suspense'),
      sales: await balance('income:sales'),
      fees: await balance('expense:service_fees'),
    });
    const open = async () =>
      (
        await db.execute<{ kind: string }>(
          sql`select kind from findings where ref_id = ${id} and resolved_at is null order by kind`,
        )
      ).rows.map((r) => r.kind);
    const keys = async () =>
      (
        await db.execute<{ idempotency_key: string }>(
          sql`select idempotency_key from ledger_entries where ref_id = ${id} order by id`,
        )
      ).rows.map((r) => r.idempotency_key);
    const trialBalanceIsZero = async () => {
      for (const line of await trialBalance(db)) expect(line.net, line.asset).toBe(0n);
    };

    // Confirmed, then proven: the final sweep of N into the merchant wallet.
    await poll(id, { tx_hash_2: sweep }, 820);
    await db.execute(sql`
      insert into chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token,
                                   from_address, to_address, value, state, source, final_at)
      values (8453, ${sweep}, 0, 901, ${`0x${'b4'.repeat(32)}`}, now(), ${USDC}, ${`0x${'cd'.repeat(20)}`},
              ${MERCHANT}, ${N.toString()}, 'final', 'logs', now())`);
    const proof = await db.transaction((tx) => proveIntentPayment(tx, deps, id));
    expect(proof.proven?.created).toBe(true);
    const sold = { in_transit: 0n, wallet: N, suspense: 0n, sales: -25_000_000n, fees: 250_000n };
    expect(await books()).toEqual(sold);

    // The service contradicts itself: CANCELED. Rule 1 is reversed; the proven money is in the
    // wallet and goes to suspense for a person.
    const canceled = await poll(id, { tx_hash_2: sweep, status: -4 }, 821);
    expect(canceled.reversed?.created).toBe(true);
    // Before: in_transit -N, suspense 0: the money in the wallet explained by nothing.
    const inSuspense = { in_transit: 0n, wallet: N, suspense: -N, sales: 0n, fees: 0n };
    expect(await books()).toEqual(inSuspense);
    expect(await open()).toEqual(['confirmed_then_failed', 'proven_then_failed']);
    await trialBalanceIsZero();
    const afterCancel = await keys();
    expect(afterCancel.slice(2)).toEqual([
      `reversal:checkout:confirmed:${id}`,
      `checkout:proven_reversed:${id}`,
    ]);
    // Replays of the failure, and of the proof, book nothing.
    await poll(id, { tx_hash_2: sweep, status: -4 }, 822);
    await db.transaction((tx) => proveIntentPayment(tx, deps, id));
    expect(await keys()).toEqual(afterCancel);

    // CONFIRMED again: rule 1 is booked anew (:r1) and the suspense entry is reversed, so the
    // proven money is the sale's again, counted once.
    const again = await poll(id, { tx_hash_2: sweep }, 823);
    expect(again.posted?.created).toBe(true);
    expect(await books()).toEqual(sold);
    expect(await open()).toEqual(['confirmed_then_failed', 'terminal_status_changed']);
    await trialBalanceIsZero();
    const afterAgain = await keys();
    expect(afterAgain.slice(afterCancel.length)).toEqual([
      `checkout:confirmed:${id}:r1`,
      `reversal:checkout:proven_reversed:${id}`,
    ]);
    // Replays: the same read, a webhook of it, the proof.
    await poll(id, { tx_hash_2: sweep }, 824);
    await db.transaction((tx) => proveIntentPayment(tx, deps, id));
    expect(await keys()).toEqual(afterAgain);
    expect(await books()).toEqual(sold);

    // And once more: each revision has its own suspense entry, reversed by the next confirmation.
    await poll(id, { tx_hash_2: sweep, status: -2 }, 825);
    expect(await books()).toEqual(inSuspense);
    await poll(id, { tx_hash_2: sweep }, 826);
    expect(await books()).toEqual(sold);
    expect((await keys()).slice(afterAgain.length)).toEqual([
      `reversal:checkout:confirmed:${id}:r1`,
      `checkout:proven_reversed:${id}:r1`,
      `checkout:confirmed:${id}:r2`,
      `reversal:checkout:proven_reversed:${id}:r1`,
    ]);
    await trialBalanceIsZero();
  });

  it('behavior: figures that do not add up, proven, CANCELED, then CONFIRMED again: rule 1 books anew from the proof in suspense', async () => {
    const id = 'aa0000000000000000000035';
    const sweep = `0x${'e5'.repeat(32)}`;
    const N = 24_750_000n;
    // P - F = 24.75, the service says N = 24.70: rule 1 waits for the chain's net.
    const figures = { tx_hash_2: sweep, net_income_amount: '24.70' };
    const balance = async (kind: string) => {
      const { rows } = await db.execute<{ net: string }>(sql`
        select coalesce(sum(p.amount), 0)::text as net from ledger_postings p
        join ledger_entries e on e.id = p.entry_id join ledger_accounts a on a.id = p.account_id
        where e.ref_id = ${id} and a.code like ${`${kind}:%`}`);
      return BigInt(rows[0]?.net ?? '0');
    };
    const books = async () => ({
      in_transit: await balance('assets:in_transit'),
      wallet: await balance('assets:wallet'),
      suspense: await balance('assets:suspense'),
      sales: await balance('income:sales'),
      fees: await balance('expense:service_fees'),
    });
    const first = await poll(id, figures, 830);
    expect(first.posted).toBeNull();
    await db.execute(sql`
      insert into chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token,
                                   from_address, to_address, value, state, source, final_at)
      values (8453, ${sweep}, 0, 902, ${`0x${'b5'.repeat(32)}`}, now(), ${USDC}, ${`0x${'cd'.repeat(20)}`},
              ${MERCHANT}, ${N.toString()}, 'final', 'logs', now())`);
    const proof = await db.transaction((tx) => proveIntentPayment(tx, deps, id));
    expect(proof.proven?.created).toBe(true);
    const sold = { in_transit: 0n, wallet: N, suspense: 0n, sales: -25_000_000n, fees: 250_000n };
    expect(await books()).toEqual(sold);

    await poll(id, { ...figures, status: -4 }, 831);
    expect(await books()).toEqual({ in_transit: 0n, wallet: N, suspense: -N, sales: 0n, fees: 0n });

    // Before: rule 1 waited for a proof that had been made (its log matched already), so the
    // sale was never booked again and the money stayed in suspense.
    const again = await poll(id, figures, 832);
    expect(again.posted?.created).toBe(true);
    expect(await books()).toEqual(sold);
    for (const line of await trialBalance(db)) expect(line.net, line.asset).toBe(0n);
  });

  it('behavior: a CONFIRMED that waited on the row lock while a failure reversed rule 1 books the next revision (:r1)', async () => {
    const id = 'aa0000000000000000000019';
    await poll(id, {}, 500);
    // T1 records CANCELED (reversing rule 1) and holds the row lock until released.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked!: () => void;
    const holding = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const t1 = db.transaction(async (tx) => {
      const r = await applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id, { status: -4 }),
        source: 'poll',
        observedAt: at(510),
      });
      locked();
      await gate;
      return r;
    });
    await holding;
    // T2, a newer CONFIRMED, starts while T1 holds the lock: its lock statement waits for T1.
    const t2 = db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id),
        source: 'webhook',
        observedAt: at(520),
      }),
    );
    await waitForLockWait(id);
    release();
    expect((await t1).reversed?.created).toBe(true);
    const again = await t2;
    // Before: T2 counted the reversals in the snapshot its lock statement took before the wait
    // (none), re-posted under the reversed entry's key, and the conflict was swallowed: CONFIRMED,
    // settled, no income.
    expect(again).toMatchObject({ previousStatus: -4, status: 20, settled: true });
    expect(again.posted?.created).toBe(true);
    const { rows } = await db.execute<{ idempotency_key: string; kind: string }>(sql`
      select idempotency_key, kind from ledger_entries where ref_id = ${id} order by id`);
    expect(rows).toEqual([
      { idempotency_key: `checkout:confirmed:${id}`, kind: 'checkout.confirmed' },
      { idempotency_key: `reversal:checkout:confirmed:${id}`, kind: 'checkout.confirmed.reversal' },
      { idempotency_key: `checkout:confirmed:${id}:r1`, kind: 'checkout.confirmed' },
    ]);
  });

  it('behavior: text PostgreSQL cannot store (NUL, a lone surrogate) is recorded with U+FFFD instead of failing for ever', async () => {
    const id = 'aa0000000000000000000018';
    const result = await poll(id, { user_name: 'Jo\u0000e', order_description: 'half \ud800 pair' }, 400);
    expect(result.posted?.created).toBe(true);
    const { rows } = await db.execute<{ user_name: string; description: string; raw_name: string }>(sql`
      select user_name, order_description as description, raw_payload->>'user_name' as raw_name
      from checkout_intents where id = ${id}`);
    expect(rows).toEqual([
      { user_name: 'Jo\uFFFDe', description: 'half \uFFFD pair', raw_name: 'Jo\uFFFDe' },
    ]);
  });

  it('behavior: a webhook that disagrees with the API is a finding', async () => {
    const id = 'aa0000000000000000000009';
    const webhook = webhookOf(id, 9, { amount_coins: '26' });
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id, { status: 10 }),
        source: 'webhook',
        observedAt: at(11),
        webhook,
      }),
    );
    const { rows } = await db.execute<{ details: { differences: Record<string, unknown> } }>(
      sql`select details from findings where ref_id = ${id} and kind = 'webhook_api_mismatch'`,
    );
    expect(Object.keys(rows[0]!.details.differences).sort()).toEqual(['amount_coins', 'status']);
    expect(await entriesOf(id)).toEqual([]);
  });

  it('behavior: a webhook ahead of an API read that was only behind resolves once a read agrees; a real disagreement stays', async () => {
    const open = async (id: string) =>
      (
        await db.execute<{ kind: string }>(
          sql`select kind from findings where ref_id = ${id} and resolved_at is null order by kind`,
        )
      ).rows.map((r) => r.kind);
    // The webhook says CONFIRMED and paid 25; the API read is still ON_CHAIN, without amounts.
    const behind = 'aa0000000000000000000029';
    const notYet = {
      status: 10 as const,
      actual_paid_amount: null,
      service_fee_amount: null,
      net_income_amount: null,
    };
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(behind, notYet),
        source: 'webhook',
        observedAt: at(750),
        webhook: webhookOf(behind, 29, { actual_paid_amount: '25' }),
      }),
    );
    expect(await open(behind)).toEqual(['webhook_api_mismatch']);
    // The next poll reads what the webhook said: nothing disagrees any more.
    expect((await poll(behind, {}, 751)).posted?.created).toBe(true);
    // Before: open for ever, though the two sources agreed.
    expect(await open(behind)).toEqual([]);

    // A webhook whose amount the API never confirms stays a finding.
    const differs = 'aa0000000000000000000030';
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(differs, notYet),
        source: 'webhook',
        observedAt: at(752),
        webhook: webhookOf(differs, 30, { actual_paid_amount: '26' }),
      }),
    );
    await poll(differs, {}, 753);
    expect(await open(differs)).toEqual(['webhook_api_mismatch']);
  });

  it('behavior: a webhook saying not paid while the API says paid is a finding', async () => {
    const id = 'aa0000000000000000000010';
    const webhook = webhookOf(id, 10, { status: -3 });
    await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id),
        source: 'webhook',
        observedAt: at(12),
        webhook,
      }),
    );
    const { rows } = await db.execute<{ details: { differences: Record<string, unknown> } }>(
      sql`select details from findings where ref_id = ${id} and kind = 'webhook_api_mismatch'`,
    );
    expect(rows[0]?.details.differences).toEqual({ status: { webhook: -3, api: 20 } });
    // The books follow the API.
    expect((await entriesOf(id)).map((e) => e.kind)).toEqual(['checkout.confirmed']);
  });

  it('behavior: a webhook of a status on the way (ON_CHAIN, MANUAL_OPERATION) processed after the API says paid is no finding', async () => {
    // Before: a warning that never resolved (only a read saying "not paid" again would have), on
    // 233 of the 290 open ones in simulator seeds 1-300: the status had only moved on.
    for (const [n, status] of [
      [40, 10],
      [41, 4],
    ] as const) {
      const id = `aa00000000000000000000${n}`;
      await db.transaction((tx) =>
        applyIntentSnapshot(tx, deps, {
          storeId: 'st_a',
          intent: intent(id),
          source: 'webhook',
          observedAt: at(n),
          webhook: webhookOf(id, n, { status, actual_paid_amount: null }),
        }),
      );
      expect(await findingsOf(id)).toEqual([]);
      expect((await entriesOf(id)).map((e) => e.kind)).toEqual(['checkout.confirmed']);
    }
  });

  it('behavior: a field learnt after booking (tx_hash_2) updates the facts; the one entry stays', async () => {
    const id = 'aa0000000000000000000011';
    const first = await poll(id, { tx_hash_2: null }, 13);
    expect(first.posted?.created).toBe(true);
    // Routed (fee 0.25 kept) with its sweep not reported yet: polled on until a read names it.
    // Before: settled, never polled again, so rule 2 read the buyer's deposit and never proved it.
    expect(first.settled).toBe(false);
    // Before: the entry's metadata differed, so the re-post threw IdempotencyConflictError and
    // rolled the observation back, for ever.
    const second = await poll(id, { tx_hash_2: `0x${'2'.repeat(64)}` }, 14);
    expect(second.posted).toBeNull();
    expect(second.settled).toBe(true);
    const row = await db.execute<{ tx_hash_2: string | null }>(
      sql`select tx_hash_2 from checkout_intents where id = ${id}`,
    );
    expect(row.rows[0]?.tx_hash_2).toBe(`0x${'2'.repeat(64)}`);
    expect(await entriesOf(id)).toHaveLength(1);
    expect(await findingsOf(id)).toEqual([]);
  });

  it('behavior: a later read without the transaction hashes keeps those already reported', async () => {
    const id = 'aa0000000000000000000027';
    await poll(id, {}, 730);
    const bare = await poll(id, { tx_hash: null, tx_hash_2: null, tx_from: null }, 731);
    expect(bare.settled).toBe(true);
    const row = async () =>
      (
        await db.execute<{
          tx_hash: string | null;
          tx_hash_2: string | null;
          tx_from: string | null;
          tx_to: string | null;
        }>(sql`select tx_hash, tx_hash_2, tx_from, tx_to from checkout_intents where id = ${id}`)
      ).rows[0];
    // Before: all three became NULL, and rule 2 and the payment verifier lost the transfer to prove.
    expect(await row()).toEqual({
      tx_hash: `0x${'1'.repeat(64)}`,
      tx_hash_2: `0x${'2'.repeat(64)}`,
      tx_from: `0x${'cd'.repeat(20)}`,
      tx_to: MERCHANT,
    });
    // A different hash reported later replaces the known one.
    await poll(id, { tx_hash_2: `0x${'3'.repeat(64)}` }, 732);
    expect((await row())?.tx_hash_2).toBe(`0x${'3'.repeat(64)}`);
    expect(await entriesOf(id)).toHaveLength(1);
  });

  it('error: the chain side finding a payment in a token it does not accept stays open when rule 1 replays', async () => {
    const id = 'aa0000000000000000000028';
    await poll(id, {}, 740);
    // The verifier reads the payment's receipt: the transfer into tx_to is of a fake contract.
    const fake = paymentProven({
      storeId: 'st_a',
      intentId: id,
      transfer: {
        chainId: 8453,
        txHash: `0x${'1'.repeat(64)}`,
        logIndex: 0,
        blockNumber: 100n,
        blockHash: `0x${'b'.repeat(64)}`,
        tokenAddress: `0x${'99'.repeat(20)}`,
        from: `0x${'cd'.repeat(20)}`,
        to: MERCHANT as `0x${string}`,
        amount: 24_750_000n,
        occurredAt: at(741),
        revival: 0,
      },
      token: null,
      expected: {
        token: chains.token(8453, USDC)!,
        recipient: MERCHANT as `0x${string}`,
        amount: 24_750_000n,
      },
    });
    for (const f of fake.findings) await recordFinding(db, f, 'st_a');
    const open = async () =>
      (
        await db.execute<{ kind: string }>(
          sql`select kind from findings where ref_id = ${id} and resolved_at is null order by kind`,
        )
      ).rows.map((r) => r.kind);
    const kinds = fake.findings.map((f) => f.kind);
    expect(await open()).toEqual(kinds);
    // A duplicate webhook, or a replay, applies the confirmation again: rule 1 replays.
    expect((await poll(id, {}, 742)).posted).toMatchObject({ created: false });
    // Before: it was `unknown_token`, rule 1's own kind, and the replay resolved the only sign of
    // a fake payment.
    expect(await open()).toEqual(kinds);
    expect(kinds).toEqual(['payment_unknown_token']);
  });

  it('error: amounts changed after booking are a critical finding; the entry is not touched', async () => {
    const id = 'aa0000000000000000000012';
    await poll(id, {}, 15);
    const before = await entriesOf(id);
    const changed = await poll(id, { service_fee_amount: '0.30', net_income_amount: '24.70' }, 16);
    expect(changed.posted).toBeNull();
    expect(await entriesOf(id)).toEqual(before);
    const { rows } = await db.execute<{ severity: string; details: Record<string, Record<string, string>> }>(
      sql`select severity, details from findings where ref_id = ${id} and kind = 'confirmed_amounts_changed'`,
    );
    expect(rows[0]?.severity).toBe('critical');
    expect(rows[0]?.details.booked?.['expense:service_fees:st_a:8453:USDC']).toBe('250000');
    expect(rows[0]?.details.observed?.['expense:service_fees:st_a:8453:USDC']).toBe('300000');
    const facts = await db.execute<{ service_fee_amount: string }>(
      sql`select service_fee_amount from checkout_intents where id = ${id}`,
    );
    expect(facts.rows[0]?.service_fee_amount).toBe('0.30');
  });

  it('error: a read naming another chain, token or recipient after rule 1 booked keeps the booked facts, is a finding, and rule 2 still proves the payment', async () => {
    const id = 'aa0000000000000000000033';
    const sweep = `0x${'e3'.repeat(32)}`;
    const first = await poll(id, { tx_hash_2: sweep }, 810);
    expect(first).toMatchObject({ settled: true, posted: { created: true } });
    const facts = async () =>
      (
        await db.execute<{
          chain_id: number;
          coin_contract: string;
          coin_symbol: string;
          tx_to: string;
          settled_by: string | null;
        }>(
          sql`select chain_id::int, coin_contract, coin_symbol, tx_to, settled_by from checkout_intents where id = ${id}`,
        )
      ).rows[0];
    const booked = {
      chain_id: 8453,
      coin_contract: USDC,
      coin_symbol: 'USDC',
      tx_to: MERCHANT,
      settled_by: 'poll',
    };
    const elsewhere = `0x${'ef'.repeat(20)}`;
    // Another chain, a contract the registry does not know, another recipient.
    const other = {
      tx_hash_2: sweep,
      chain_id: 999,
      coin_contract: `0x${'77'.repeat(20)}`,
      tx_to: elsewhere,
    };
    const changed = await poll(id, other, 811);
    // Before: the row took chain 999, the unknown contract and the other tx_to; rule 1 saw an
    // unknown token, so the intent was unsettled (settled_by null) and polled again.
    expect(changed).toMatchObject({
      status: 20,
      settled: true,
      posted: { id: first.posted!.id, created: false },
    });
    expect(await facts()).toEqual(booked);
    const finding = async () =>
      (
        await db.execute<{ severity: string; details: Record<string, unknown> }>(
          sql`select severity, details from findings where ref_id = ${id} and kind = 'confirmed_facts_changed' and resolved_at is null`,
        )
      ).rows;
    expect(await finding()).toEqual([
      {
        severity: 'critical',
        details: {
          differences: {
            chain_id: { booked: 8453, observed: 999 },
            coin_contract: { booked: USDC, observed: `0x${'77'.repeat(20)}` },
            tx_to: { booked: MERCHANT, observed: elsewhere },
          },
        },
      },
    ]);
    expect(await findingsOf(id)).toEqual(['confirmed_facts_changed']);

    // The other registry token of the same chain is a disagreement too; the address's case is not.
    const usdt = chains.tokenBySymbol(8453, 'USDT')!.address;
    await poll(id, { tx_hash_2: sweep, coin_contract: usdt, coin_symbol: 'USDT' }, 812);
    expect(await facts()).toEqual(booked);
    expect((await finding())[0]?.details).toEqual({
      differences: { coin_contract: { booked: USDC, observed: usdt } },
    });
    await poll(id, { tx_hash_2: sweep, tx_to: MERCHANT.toUpperCase().replace('0X', '0x') }, 813);
    expect(await facts()).toEqual(booked);
    expect(await findingsOf(id)).toEqual(['confirmed_facts_changed']);

    // The real payment (24.75 USDC into the merchant wallet on Base) is final; a disagreeing read
    // applied after it still proves it from the booked facts.
    await db.execute(sql`
      insert into chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token,
                                   from_address, to_address, value, state, source, final_at)
      values (8453, ${sweep}, 0, 900, ${`0x${'b3'.repeat(32)}`}, now(), ${USDC}, ${`0x${'cd'.repeat(20)}`},
              ${MERCHANT}, 24750000, 'final', 'logs', now())`);
    expect(await poll(id, other, 814)).toMatchObject({ settled: true });
    expect((await entriesOf(id)).map((e) => e.kind)).toEqual(['checkout.confirmed', 'chain.payment_proven']);
    const inTransit = await db.execute<{ net: string }>(sql`
      select coalesce(sum(p.amount), 0)::text as net from ledger_postings p
      join ledger_entries e on e.id = p.entry_id join ledger_accounts a on a.id = p.account_id
      where e.ref_id = ${id} and a.code like 'assets:in_transit:%'`);
    expect(inTransit.rows[0]?.net).toBe('0');
  });

  it('error: an amount finer than the token is a critical finding; the facts are recorded and polling goes on', async () => {
    const id = 'aa0000000000000000000013';
    // Before: AmountFormatError rolled back the whole observation, so the intent was never recorded.
    const r = await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id, { amount_coins: '25.0000001' }),
        source: 'webhook',
        observedAt: at(17),
      }),
    );
    expect(r).toMatchObject({ status: 20, terminal: true, settled: false, posted: null });
    const row = await db.execute<{ status: number; settled_by: string | null }>(
      sql`select status, settled_by from checkout_intents where id = ${id}`,
    );
    expect(row.rows[0]).toEqual({ status: 20, settled_by: null });
    expect(await entriesOf(id)).toEqual([]);
    expect(await findingsOf(id)).toEqual(['amount_format_error']);
  });

  it("behavior: amounts padded with zeros beyond the token's decimals are exact and book rule 1", async () => {
    const id = 'aa0000000000000000000031';
    // USDC on Base has 6 decimals; each amount carries zeros beyond them, and nothing else.
    const padded = {
      amount_coins: '25.000000000',
      actual_paid_amount: '25.0000000',
      service_fee_amount: '0.250000000',
      net_income_amount: '24.750000000000',
    };
    const r = await poll(id, padded, 800);
    // Before: AmountFormatError, so no income was booked (amount_format_error, polled for ever)
    // and the payment's cash would have gone to suspense.
    expect(r).toMatchObject({ status: 20, settled: true, posted: { created: true } });
    expect(await entriesOf(id)).toEqual([
      {
        kind: 'checkout.confirmed',
        lines: [
          'assets:in_transit:st_a:8453:USDC 24750000',
          'expense:service_fees:st_a:8453:USDC 250000',
          'income:sales:st_a:8453:USDC -25000000',
        ],
      },
    ]);
    expect(await findingsOf(id)).toEqual([]);
    // The same amounts written canonically are the same confirmation: nothing new, no finding.
    expect(await poll(id, {}, 801)).toMatchObject({ settled: true, posted: null });
    expect(await entriesOf(id)).toHaveLength(1);
    expect(await findingsOf(id)).toEqual([]);
    // Real precision beyond the token is still refused, never rounded.
    const finer = 'aa0000000000000000000032';
    expect(await poll(finer, { ...padded, actual_paid_amount: '25.0000001' }, 802)).toMatchObject({
      settled: false,
      posted: null,
    });
    expect(await findingsOf(finer)).toEqual(['amount_format_error']);
  });

  it('error: an amount whose base units a posting cannot hold (numeric(78,0)) is a critical finding, not a failure for ever', async () => {
    const id = 'aa0000000000000000000020';
    // 75 whole digits pass the model (at most 78 digits), but in USDC's 6 decimals they are 81.
    const huge = '9'.repeat(75);
    // Before: PostgreSQL refused the posting (numeric field overflow) on every retry.
    const r = await poll(
      id,
      { amount_coins: huge, actual_paid_amount: huge, net_income_amount: huge, service_fee_amount: '0' },
      600,
    );
    expect(r).toMatchObject({ status: 20, terminal: true, settled: false, posted: null });
    expect(await entriesOf(id)).toEqual([]);
    const { rows } = await db.execute<{ severity: string; details: Record<string, unknown> }>(
      sql`select severity, details from findings where ref_id = ${id} and kind = 'amount_format_error'`,
    );
    expect(rows).toEqual([
      {
        severity: 'critical',
        details: expect.objectContaining({ amount: huge, decimals: 6, token: 'USDC', chain_id: 8453 }),
      },
    ]);
  });

  it('behavior: CONFIRMED without amounts is not settled; a later answer with them books and settles it', async () => {
    const id = 'aa0000000000000000000014';
    const bare = await poll(
      id,
      { actual_paid_amount: null, service_fee_amount: null, net_income_amount: null },
      18,
    );
    expect(bare).toMatchObject({ terminal: true, settled: false, posted: null });
    expect(await findingsOf(id)).toEqual(['confirmed_without_amounts']);
    const full = await poll(id, {}, 19);
    expect(full.settled).toBe(true);
    expect(full.posted?.created).toBe(true);
    const row = await db.execute<{ settled_by: string | null }>(
      sql`select settled_by from checkout_intents where id = ${id}`,
    );
    expect(row.rows[0]?.settled_by).toBe('poll');
  });

  it('behavior: a CONFIRMED read without amounts after rule 1 was booked keeps the amounts and the settlement', async () => {
    const id = 'aa0000000000000000000021';
    const bare = { actual_paid_amount: null, service_fee_amount: null, net_income_amount: null };
    const full = await poll(id, {}, 700);
    expect(full).toMatchObject({ settled: true, posted: { created: true } });
    // A duplicate webhook whose API read lacks the amounts (the webhook itself carries P).
    const duplicate = await db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, {
        storeId: 'st_a',
        intent: intent(id, bare),
        source: 'webhook',
        observedAt: at(701),
        webhook: webhookOf(id, 21, { actual_paid_amount: '25' }),
      }),
    );
    // Before: the amounts became NULL, settled_by was cleared (polling restarted) and
    // confirmed_without_amounts opened, so reconciliation's matching dropped the intent.
    expect(duplicate).toMatchObject({
      status: 20,
      settled: true,
      posted: { id: full.posted!.id, created: false },
    });
    const replay = await poll(id, bare, 702);
    expect(replay).toMatchObject({ settled: true, posted: { created: false } });
    const stored = async () =>
      (
        await db.execute<{
          paid: string | null;
          fee: string | null;
          net: string | null;
          settled_by: string | null;
          raw_paid: string | null;
        }>(sql`
          select actual_paid_amount as paid, service_fee_amount as fee, net_income_amount as net, settled_by,
                 raw_payload->>'actual_paid_amount' as raw_paid
          from checkout_intents where id = ${id}`)
      ).rows[0];
    // The facts stay; raw_payload keeps the last read as it was sent.
    expect(await stored()).toEqual({
      paid: '25',
      fee: '0.25',
      net: '24.75',
      settled_by: 'poll',
      raw_paid: null,
    });
    expect((await poll(id, {}, 703)).settled).toBe(true);
    expect(await stored()).toEqual({
      paid: '25',
      fee: '0.25',
      net: '24.75',
      settled_by: 'poll',
      raw_paid: '25',
    });
    expect((await entriesOf(id)).map((e) => e.kind)).toEqual(['checkout.confirmed']);
    expect(await findingsOf(id)).toEqual([]);
  });

  it('behavior: a CONFIRMED read without amounts after rule 1 was reversed is not booked and keeps polling', async () => {
    const id = 'aa0000000000000000000022';
    await poll(id, {}, 710);
    await poll(id, { status: -4 }, 711);
    const bare = await poll(
      id,
      { actual_paid_amount: null, service_fee_amount: null, net_income_amount: null },
      712,
    );
    expect(bare).toMatchObject({ status: 20, settled: false, posted: null });
    expect(await findingsOf(id)).toEqual([
      'confirmed_then_failed',
      'confirmed_without_amounts',
      'terminal_status_changed',
    ]);
  });

  it('behavior: the findings that kept rule 1 out resolve when it finally posts', async () => {
    const open = async (id: string) =>
      (
        await db.execute<{ kind: string }>(
          sql`select kind from findings where ref_id = ${id} and resolved_at is null order by kind`,
        )
      ).rows.map((r) => r.kind);
    // No amounts, then a read with them.
    const noAmounts = 'aa0000000000000000000023';
    await poll(
      noAmounts,
      { actual_paid_amount: null, service_fee_amount: null, net_income_amount: null },
      720,
    );
    expect(await open(noAmounts)).toEqual(['confirmed_without_amounts']);
    expect((await poll(noAmounts, {}, 721)).posted?.created).toBe(true);
    expect(await open(noAmounts)).toEqual([]);
    expect(await findingsOf(noAmounts)).toEqual(['confirmed_without_amounts']);

    // An amount finer than the token, then the service corrects it.
    const tooFine = 'aa0000000000000000000024';
    await poll(tooFine, { amount_coins: '25.0000001' }, 722);
    expect(await open(tooFine)).toEqual(['amount_format_error']);
    expect((await poll(tooFine, {}, 723)).posted?.created).toBe(true);
    expect(await open(tooFine)).toEqual([]);

    // A token the registry does not know, then the registry learns it (a CHAINS_FILE fix) and the
    // same answer is applied again (a replay or the next poll).
    const unknownToken = 'aa0000000000000000000025';
    const token = `0x${'77'.repeat(20)}`;
    const onChain999 = { chain_id: 999, coin_contract: token };
    await poll(unknownToken, onChain999, 724);
    expect(await open(unknownToken)).toEqual(['unknown_token']);
    const fixed = {
      chains: createChainRegistry([{ chain_id: 999, tokens: { USDC: { address: token, decimals: 6 } } }]),
      stores,
      accounts: createAccountCache(),
    };
    const booked = await db.transaction((tx) =>
      applyIntentSnapshot(tx, fixed, {
        storeId: 'st_a',
        intent: intent(unknownToken, onChain999),
        source: 'poll',
        observedAt: at(725),
      }),
    );
    expect(booked).toMatchObject({ settled: true, posted: { created: true } });
    expect(await open(unknownToken)).toEqual([]);
  });

  it('behavior: a webhook that writes an amount another way ("25.00" for "25") agrees with the API', async () => {
    const id = 'aa0000000000000000000026';
    const apply = (n: number, patch: Record<string, unknown>) =>
      db.transaction((tx) =>
        applyIntentSnapshot(tx, deps, {
          storeId: 'st_a',
          intent: intent(id),
          source: 'webhook',
          observedAt: at(730 + n),
          webhook: webhookOf(id, 260 + n, patch),
        }),
      );
    // Before: compared as strings, each was a false webhook_api_mismatch.
    await apply(0, { amount_coins: '25.00', actual_paid_amount: '25.000000' });
    await apply(1, { amount_coins: '025', actual_paid_amount: '25.0' });
    expect(await findingsOf(id)).toEqual([]);
    // A different amount, however written, still disagrees.
    await apply(2, { amount_coins: '25.000001', actual_paid_amount: '24.99' });
    const { rows } = await db.execute<{ details: { differences: Record<string, unknown> } }>(
      sql`select details from findings where ref_id = ${id} and kind = 'webhook_api_mismatch'`,
    );
    expect(rows[0]?.details.differences).toEqual({
      amount_coins: { webhook: '25.000001', api: '25' },
      actual_paid_amount: { webhook: '24.99', api: '25' },
    });
  });

  it('behavior: the trial balance stays zero', async () => {
    for (const line of await trialBalance(db)) expect(line.net).toBe(0n);
  });
});
