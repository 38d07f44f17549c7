import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { moveLeftover } from '../../../src/corrections/moveLeftover.ts';
import { undoCorrection } from '../../../src/corrections/undoCorrection.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { CHAIN_ID, createSuspenseKit, MERCHANT, STRANGER, USDT } from '../suspense/suspenseKit.ts';

/**
 * The corrections domain on books the real settlement wrote: rule 4's proven money in suspense
 * (an intent proven, then CANCELED), and two corrections of one leftover at once.
 */
const kit = await createSuspenseKit('corrections');

async function failAfterProof(id: string, value: bigint): Promise<void> {
  const paid = await kit.transfer(STRANGER, MERCHANT, value);
  const coins = (Number(value) / 1e6).toString();
  await kit.confirm(id, paid.txHash, coins);
  await kit.settle();
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
    status: -4,
    order_id: null,
    order_description: null,
    user_id: null,
    user_name: null,
    error_message: null,
    tx_hash: paid.txHash,
    tx_hash_2: null,
    tx_from: null,
    tx_to: MERCHANT,
    actual_paid_amount: coins,
    service_fee_amount: '0',
    net_income_amount: coins,
    payment_method_type: 1,
    accepted_stable_coins: 1,
  } as CheckoutIntent;
  await kit.db.db.transaction((tx) =>
    applyIntentSnapshot(
      tx,
      { chains: kit.registry, accounts: kit.accounts, stores: kit.stores },
      { storeId: 'st_a', intent, source: 'poll', observedAt: new Date(Date.now() + 60_000) },
    ),
  );
}

async function findingOf(id: string): Promise<string> {
  const { rows } = await kit.db.db.execute<{ id: string }>(
    sql`select id::text from findings where kind = 'proven_then_failed' and ref_id = ${id}`,
  );
  if (!rows[0]) throw new Error(`no proven_then_failed of ${id}`);
  return rows[0].id;
}

const request = (finding: string, note: string) => ({
  finding,
  to: 'liability:refunds_payable',
  note,
  by: 'alice',
  at: new Date(),
});

describe('corrections', () => {
  it('behavior: rule 4’s proven money in suspense goes to refunds payable, and back on undo', async () => {
    await failAfterProof('ci_failed', 12_000_000n);
    const finding = await findingOf('ci_failed');
    const suspense = await kit.balance('assets:suspense');
    const moved = await kit.db.db.transaction((tx) =>
      moveLeftover(tx, request(finding, 'pay the buyer back')),
    );
    expect(moved.correction).toMatchObject({
      fromAccount: 'assets:suspense',
      toAccount: 'liability:refunds_payable',
      amount: 12_000_000n,
      findingKind: 'proven_then_failed',
    });
    expect(moved.leftAfter).toBe(0n);
    expect((await kit.balance('assets:suspense')) - suspense).toBe(12_000_000n);
    expect(await kit.balance('liability:refunds_payable')).toBe(-12_000_000n);
    const undone = await kit.db.db.transaction((tx) =>
      undoCorrection(tx, {
        correction: moved.correction.id.toString(),
        note: 'wrong intent',
        by: 'bob',
        at: new Date(),
      }),
    );
    expect(undone.kind).toBe('undone');
    expect(await kit.balance('assets:suspense')).toBe(suspense);
    expect(await kit.balance('liability:refunds_payable')).toBe(0n);
    expect(await kit.trialIsZero()).toBe(true);
  });

  it('behavior: two corrections of one leftover at once: one moves it, the other finds nothing left', async () => {
    await failAfterProof('ci_race', 9_000_000n);
    const finding = await findingOf('ci_race');
    // The first holds its transaction open after moving: the second must wait for it, then find 0.
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = kit.db.db.transaction(async (tx) => {
      const moved = await moveLeftover(tx, request(finding, 'first'));
      await gate;
      return moved;
    });
    await new Promise((r) => setTimeout(r, 300));
    const second = kit.db.db.transaction((tx) => moveLeftover(tx, request(finding, 'second')));
    await new Promise((r) => setTimeout(r, 300));
    release();
    const results = await Promise.allSettled([first, second]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(String(refused.reason)).toMatch(/leave nothing in assets:suspense; nothing to move/);
    const { rows } = await kit.db.db.execute<{ n: number }>(
      sql`select count(*)::int as n from corrections where finding_id = ${finding}::bigint`,
    );
    expect(rows[0]?.n).toBe(1);
  });
});
