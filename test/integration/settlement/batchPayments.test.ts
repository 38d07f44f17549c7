import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../../src/clock.ts';
import { balances, trialBalance } from '../../../src/ledger/balances.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { checkoutConfirmed, checkoutConfirmedKey } from '../../../src/ledger/rules/checkoutRules.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { CheckoutStatus } from '../../../src/svc/models/checkoutStatus.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

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
const merchant = kit.merchant.toLowerCase();
let seq = 0;

function confirmedIntent(
  txHash: string,
  coins: string,
  options: { token?: 'USDT' | 'USDC'; net?: string } = {},
) {
  return kit.confirmedIntent(txHash, { coins, ...options, observedAt: clock.now() });
}

type Log = bigint | { value: bigint; token?: 'USDT' | 'USDC'; to?: string };

/** Final Transfer logs of one transaction (into the merchant wallet in USDT unless said), in log order. */
async function storeLogs(txHash: string, logs: Log[]): Promise<void> {
  const block = 1_000 + seq++;
  for (const [logIndex, log] of logs.entries()) {
    const { value, token = 'USDT', to = merchant } = typeof log === 'bigint' ? { value: log } : log;
    await kit.db.db.execute(sql`
      insert into chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token,
                                   from_address, to_address, value, state, source, final_at)
      values (${CHAIN_ID}, ${txHash}, ${logIndex}, ${block}, ${`0x${block.toString(16).padStart(64, '0')}`}, now(),
              ${kit.chain.tokens[token].address.toLowerCase()}, ${`0x${'77'.repeat(20)}`}, ${to}, ${value.toString()},
              'final', 'logs', now())`);
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
      expect(await settleTransfers(applyDeps, CHAIN_ID)).toMatchObject({ deferred: 0, unwound: 0 });
      expect(await matched(hash)).toEqual([
        { log_index: 0, matched_as: 'payment_proof', matched_ref: small },
        { log_index: 1, matched_as: 'payment_proof', matched_ref: big },
      ]);
      expect(await usdt('assets:in_transit')).toBe(0n);
      expect(await usdt('assets:wallet')).toBe(walletBefore + 35_000_000n);
      expect(await openFindings()).toEqual([]);
      // Nothing more to do, from either side.
      expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 0, unwound: 0 });
    },
  );

  it('behavior: a second transfer in the paying transaction proves nothing: it waits the grace, then goes to suspense', async () => {
    const hash = txHashOf(seq++);
    const paid = await confirmedIntent(hash, '25');
    await storeLogs(hash, [25_000_000n, 3_000_000n]);
    const walletBefore = await usdt('assets:wallet');
    clock.set(new Date());
    expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 1, deferred: 1, unwound: 0 });
    clock.advance(2 * GRACE);
    expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 1, deferred: 0, unwound: 0 });
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

  it('behavior: a USDT and a USDC invoice of the same amount in one transaction each take the log of their own token', async () => {
    const hash = txHashOf(seq++);
    await storeLogs(hash, [
      { value: 10_000_000n, token: 'USDC' },
      { value: 10_000_000n, token: 'USDT' },
    ]);
    const usdtIntent = await confirmedIntent(hash, '10');
    const usdcIntent = await confirmedIntent(hash, '10', { token: 'USDC' });
    expect(await matched(hash)).toEqual([
      { log_index: 0, matched_as: 'payment_proof', matched_ref: usdcIntent },
      { log_index: 1, matched_as: 'payment_proof', matched_ref: usdtIntent },
    ]);
  });

  it("behavior: while rule 1 waits for the chain (reported net != P - F), the proof takes the log of P - F, not the other intent's", async () => {
    const hash = txHashOf(seq++);
    await storeLogs(hash, [10_000_000n, 25_000_000n]);
    const reportedWrong = await confirmedIntent(hash, '25', { net: '24' });
    const plain = await confirmedIntent(hash, '10');
    expect(await matched(hash)).toEqual([
      { log_index: 0, matched_as: 'payment_proof', matched_ref: plain },
      { log_index: 1, matched_as: 'payment_proof', matched_ref: reportedWrong },
    ]);
    expect(await usdt('assets:in_transit')).toBe(0n);
  });

  it('behavior: the paying log held by a matcher at that moment: the intent side marks nothing else, and the proof comes once it is free', async () => {
    const hash = txHashOf(seq++);
    // A fee to someone else first, then the payment: the service's own split.
    await storeLogs(hash, [{ value: 1_000_000n, to: `0x${'55'.repeat(20)}` }, 25_000_000n]);
    const locker = await kit.db.pool.connect();
    let id: string;
    try {
      await locker.query('begin');
      await locker.query('select 1 from chain_transfers where tx_hash = $1 and log_index = 1 for update', [
        hash,
      ]);
      id = await confirmedIntent(hash, '25');
      expect(await matched(hash)).toEqual([
        { log_index: 0, matched_as: null, matched_ref: null },
        { log_index: 1, matched_as: null, matched_ref: null },
      ]);
    } finally {
      await locker.query('rollback');
      locker.release();
    }
    clock.set(new Date());
    await settleTransfers(applyDeps, CHAIN_ID);
    expect(await matched(hash)).toEqual([
      { log_index: 0, matched_as: 'ignored', matched_ref: null },
      { log_index: 1, matched_as: 'payment_proof', matched_ref: id },
    ]);
    expect(await usdt('assets:in_transit')).toBe(0n);
  });
});

/** Open findings about one intent: kind, severity and details. */
async function findingsOf(id: string) {
  const { rows } = await kit.db.db.execute<{
    kind: string;
    severity: string;
    details: Record<string, unknown>;
  }>(
    sql`select kind, severity, details from findings where ref_id = ${id} and resolved_at is null order by kind`,
  );
  return rows;
}

async function entryKinds(id: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(
    sql`select kind from ledger_entries where ref_id = ${id} order by id`,
  );
  return rows.map((r) => r.kind);
}

/** The USDT balances of in_transit, the wallet and suspense, to compare before and after. */
async function books() {
  return {
    inTransit: await usdt('assets:in_transit'),
    wallet: await usdt('assets:wallet'),
    suspense: await usdt('assets:suspense'),
  };
}

function moved(before: Awaited<ReturnType<typeof books>>, after: Awaited<ReturnType<typeof books>>) {
  return {
    inTransit: after.inTransit - before.inTransit,
    wallet: after.wallet - before.wallet,
    suspense: after.suspense - before.suspense,
  };
}

/** A reorg orphans the transaction's block: its rows are orphaned, as the indexer leaves them. */
async function orphan(txHash: string): Promise<void> {
  await kit.db.db.execute(sql`update chain_transfers set state = 'orphaned' where tx_hash = ${txHash}`);
}

/** The service reports the intent in another status (the stored intent, its status and `changes` applied). */
async function observe(id: string, status: number, changes: Partial<CheckoutIntent> = {}): Promise<void> {
  const { rows } = await kit.db.db.execute<{ raw_payload: CheckoutIntent }>(
    sql`select raw_payload from checkout_intents where id = ${id}`,
  );
  const intent = { ...rows[0]!.raw_payload, ...changes, status } as CheckoutIntent;
  await kit.db.db.transaction((tx) =>
    applyIntentSnapshot(
      tx,
      { chains: kit.registry, stores: kit.stores, accounts: kit.accounts },
      { storeId: 'st_a', intent, source: 'poll', observedAt: clock.now() },
    ),
  );
}

describe('a payment of another amount than N, or split over several transfers', () => {
  it.each([
    ['the matcher', 'matcher'],
    ['the confirmation', 'intents'],
  ])(
    'behavior: the one log into the wallet carries 24 where N is 25: booked at 24 by %s (wallet +24, in_transit keeps 1), with a critical finding naming both amounts',
    async (_name, last) => {
      const hash = txHashOf(seq++);
      const before = await books();
      if (last === 'intents') await storeLogs(hash, [24_000_000n]);
      const id = await confirmedIntent(hash, '25');
      if (last === 'matcher') await storeLogs(hash, [24_000_000n]);
      clock.set(new Date());
      await settleTransfers(applyDeps, CHAIN_ID);
      expect(await matched(hash)).toEqual([
        { log_index: 0, matched_as: 'payment_proof,payment_mismatch', matched_ref: id },
      ]);
      expect(moved(before, await books())).toEqual({
        inTransit: 1_000_000n,
        wallet: 24_000_000n,
        suspense: 0n,
      });
      expect(await entryKinds(id)).toEqual(['checkout.confirmed', 'chain.payment_proven']);
      const findings = await findingsOf(id);
      expect(findings.map((f) => [f.kind, f.severity])).toEqual([['payment_amount_mismatch', 'critical']]);
      expect(findings[0]!.details).toMatchObject({
        expected_amount: '25',
        actual_amount: '24',
        left_in_transit: '1',
        tx_hash: hash,
      });
      // Decided once: nothing more from either side, and nothing goes to suspense after the grace.
      clock.advance(2 * GRACE);
      expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 0, unwound: 0 });
      await observe(id, CheckoutStatus.CONFIRMED);
      expect(moved(before, await books())).toEqual({
        inTransit: 1_000_000n,
        wallet: 24_000_000n,
        suspense: 0n,
      });
      // A reorg unwinds the proof (rule 3): the whole N is back in in_transit.
      await orphan(hash);
      expect(await settleTransfers(applyDeps, CHAIN_ID)).toMatchObject({ unwound: 1 });
      expect(moved(before, await books())).toMatchObject({ inTransit: 25_000_000n, wallet: 0n });
      for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
    },
  );

  it.each([
    ['the matcher', 'matcher'],
    ['the confirmation', 'intents'],
  ])(
    'behavior: the one log into the wallet carries 26 where N is 25: booked by %s with N out of in_transit and 1 to suspense (in_transit never negative), with a critical finding',
    async (_name, last) => {
      const hash = txHashOf(seq++);
      const before = await books();
      if (last === 'intents') await storeLogs(hash, [26_000_000n]);
      const id = await confirmedIntent(hash, '25');
      if (last === 'matcher') await storeLogs(hash, [26_000_000n]);
      clock.set(new Date());
      await settleTransfers(applyDeps, CHAIN_ID);
      expect(await matched(hash)).toEqual([
        { log_index: 0, matched_as: 'payment_proof,payment_mismatch', matched_ref: id },
      ]);
      expect(moved(before, await books())).toEqual({
        inTransit: 0n,
        wallet: 26_000_000n,
        suspense: -1_000_000n,
      });
      const findings = await findingsOf(id);
      expect(findings.map((f) => [f.kind, f.severity])).toEqual([['payment_amount_mismatch', 'critical']]);
      expect(findings[0]!.details).toMatchObject({
        expected_amount: '25',
        actual_amount: '26',
        to_suspense: '1',
      });
      expect(findings[0]!.details).not.toHaveProperty('left_in_transit');
      // A reorg unwinds the proof (rule 3), all three lines: N back in in_transit, suspense clear.
      await orphan(hash);
      expect(await settleTransfers(applyDeps, CHAIN_ID)).toMatchObject({ unwound: 1 });
      expect(moved(before, await books())).toEqual({ inTransit: 25_000_000n, wallet: 0n, suspense: 0n });
      for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
    },
  );

  it.each([
    ['the matcher', 'matcher'],
    ['the confirmation', 'intents'],
  ])(
    'behavior: one intent of 25 paid as 10 + 15 in one transaction is proven by both logs, by %s; a reorg unwinds both',
    async (_name, last) => {
      const hash = txHashOf(seq++);
      const before = await books();
      if (last === 'intents') await storeLogs(hash, [10_000_000n, 15_000_000n]);
      const id = await confirmedIntent(hash, '25');
      if (last === 'matcher') await storeLogs(hash, [10_000_000n, 15_000_000n]);
      clock.set(new Date());
      expect(await settleTransfers(applyDeps, CHAIN_ID)).toMatchObject({ deferred: 0 });
      expect(await matched(hash)).toEqual([
        { log_index: 0, matched_as: 'payment_proof', matched_ref: id },
        { log_index: 1, matched_as: 'payment_proof', matched_ref: id },
      ]);
      expect(moved(before, await books())).toEqual({ inTransit: 0n, wallet: 25_000_000n, suspense: 0n });
      expect(await entryKinds(id)).toEqual([
        'checkout.confirmed',
        'chain.payment_proven',
        'chain.payment_proven',
      ]);
      expect(await findingsOf(id)).toEqual([]);
      // Nothing left for rule 9 after the grace.
      clock.advance(2 * GRACE);
      expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 0, unwound: 0 });
      expect(moved(before, await books()).suspense).toBe(0n);
      await orphan(hash);
      expect(await settleTransfers(applyDeps, CHAIN_ID)).toMatchObject({ unwound: 2 });
      expect(moved(before, await books())).toEqual({ inTransit: 25_000_000n, wallet: 0n, suspense: 0n });
      for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
    },
  );

  it('behavior: a batch paying one intent exactly and another split over two logs proves both', async () => {
    const hash = txHashOf(seq++);
    const before = await books();
    await storeLogs(hash, [10_000_000n, 10_000_000n, 15_000_000n]);
    const split = await confirmedIntent(hash, '25');
    const exact = await confirmedIntent(hash, '10');
    clock.set(new Date());
    await settleTransfers(applyDeps, CHAIN_ID);
    const rows = await matched(hash);
    expect(rows.every((r) => r.matched_as === 'payment_proof')).toBe(true);
    expect(rows.filter((r) => r.matched_ref === exact)).toHaveLength(1);
    expect(rows.filter((r) => r.matched_ref === split)).toHaveLength(2);
    expect(moved(before, await books())).toEqual({ inTransit: 0n, wallet: 35_000_000n, suspense: 0n });
  });

  it('behavior: two logs that sum to no N prove nothing: they wait the grace, then go to suspense', async () => {
    const hash = txHashOf(seq++);
    const before = await books();
    const id = await confirmedIntent(hash, '25');
    await storeLogs(hash, [10_000_000n, 14_000_000n]);
    clock.set(new Date());
    await settleTransfers(applyDeps, CHAIN_ID);
    expect((await matched(hash)).map((r) => r.matched_as)).toEqual([null, null]);
    clock.advance(2 * GRACE);
    await settleTransfers(applyDeps, CHAIN_ID);
    expect((await matched(hash)).map((r) => r.matched_as)).toEqual([
      'transfer_in_unmatched',
      'transfer_in_unmatched',
    ]);
    expect(moved(before, await books())).toEqual({
      inTransit: 25_000_000n,
      wallet: 24_000_000n,
      suspense: -24_000_000n,
    });
    expect(await entryKinds(id)).toEqual(['checkout.confirmed']);
  });
});

describe('a rule-1 entry that was reversed (confirmed, failed, confirmed again)', () => {
  it.each([
    ['as before', {}],
    ['with a net that makes rule 1 wait for the chain (reported net != P - F)', { net_income_amount: '24' }],
  ])(
    'behavior: the reversed entry proves nothing: in_transit never goes below zero, confirmed again %s',
    async (_name, changes) => {
      const hash = txHashOf(seq++);
      const before = await books();
      const id = await confirmedIntent(hash, '25');
      await observe(id, CheckoutStatus.FAILED);
      await observe(id, CheckoutStatus.CONFIRMED, changes);
      await storeLogs(hash, [25_000_000n]);
      clock.set(new Date());
      await settleTransfers(applyDeps, CHAIN_ID);
      clock.advance(2 * GRACE);
      await settleTransfers(applyDeps, CHAIN_ID);
      // Whether the money is proven against a rule 1 booked again or waits in suspense, in_transit
      // holds nothing for this intent and the wallet follows the chain.
      const after = moved(before, await books());
      expect(after.inTransit).toBe(0n);
      expect(after.wallet).toBe(25_000_000n);
      for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
    },
  );

  it('behavior: the live rule-1 entry booked again under a revision key (:r1) is the one the proof clears', async () => {
    const hash = txHashOf(seq++);
    const before = await books();
    const id = await confirmedIntent(hash, '25');
    await observe(id, CheckoutStatus.FAILED);
    // Rule 1 booked again after the reversal, under a revision of its key.
    const token = kit.registry.token(CHAIN_ID, kit.chain.tokens.USDT.address)!;
    const { entry } = checkoutConfirmed({
      storeId: 'st_a',
      intentId: id,
      occurredAt: clock.now(),
      token,
      amountCoins: '25',
      actualPaidAmount: '25',
      serviceFeeAmount: '0',
      netIncomeAmount: '25',
      fiat: { amountCents: null, currency: null, currencyRate: null },
      txHash: hash,
      txHash2: null,
    });
    await postEntry(
      kit.db.db,
      { ...entry!, idempotencyKey: `${checkoutConfirmedKey(id)}:r1` },
      {
        accounts: kit.accounts,
      },
    );
    await observe(id, CheckoutStatus.CONFIRMED);
    await storeLogs(hash, [25_000_000n]);
    clock.set(new Date());
    await settleTransfers(applyDeps, CHAIN_ID);
    expect(await matched(hash)).toEqual([{ log_index: 0, matched_as: 'payment_proof', matched_ref: id }]);
    expect(moved(before, await books())).toEqual({ inTransit: 0n, wallet: 25_000_000n, suspense: 0n });
  });
});
