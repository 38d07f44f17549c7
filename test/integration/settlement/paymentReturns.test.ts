import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../../src/clock.ts';
import { balances, trialBalance } from '../../../src/ledger/balances.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { CheckoutStatus } from '../../../src/svc/models/checkoutStatus.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * Payments the service sent back out of the merchant wallet (src/settlement/paymentReturns.ts), on a
 * real anvil: which payment a return clears when one payer paid the same amount more than once,
 * and what a reorg of the return leaves for a person.
 */
const kit = await createIndexerKit('payment_returns');
const deps = kit.deps();
const clock = createManualClock(new Date());
const GRACE = 60_000;
const applyDeps = kit.applyDeps(clock, GRACE);
const X = 20_000_000n;

await kit.chain.mint('USDC', await kit.chain.wallet('payer:pr'), 100_000_000n);

async function intent(id: string, status: number, txHash: string): Promise<void> {
  await kit.db.db.execute(sql`
    insert into checkout_intents (id, store_id, status, tracked_via, tx_hash, chain_id, amount_coins)
    values (${id}, 'st_a', ${status}, 'api', ${txHash}, ${CHAIN_ID}, '25')`);
}

/** The matcher, at the wall clock's now (the indexer stamps final_at with it): within the grace. */
function applyNow() {
  clock.set(new Date());
  return settleTransfers(applyDeps, CHAIN_ID);
}

async function openFindings(txHash: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(sql`
    select kind from findings where resolved_at is null and details->>'tx_hash' = ${txHash.toLowerCase()}
    order by id`);
  return rows.map((r) => r.kind);
}

async function usdc(kind: string): Promise<bigint> {
  let sum = 0n;
  for (const b of await balances(kit.db.db, { storeId: 'st_a' })) {
    if (b.symbol === 'USDC' && b.code.startsWith(`${kind}:`)) sum += b.balance;
  }
  return sum;
}

const suspense = () => usdc('assets:suspense');

/** The matcher once every grace is over: whatever nothing explains goes to rule 9. */
function applyLate() {
  clock.set(new Date(Date.now() + 2 * GRACE));
  return settleTransfers(applyDeps, CHAIN_ID);
}

async function matchedRows(...hashes: string[]) {
  const { rows } = await kit.db.db.execute<{
    tx_hash: string;
    matched_as: string | null;
    matched_ref: string | null;
  }>(sql`select tx_hash, matched_as, matched_ref from chain_transfers
         where tx_hash in (${sql.join(
           hashes.map((h) => sql`${h}`),
           sql`, `,
         )}) and state = 'final' order by block_number, log_index`);
  return rows;
}

async function entryKinds(...hashes: string[]): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(sql`
    select kind from ledger_entries
    where ref_type = 'chain_transfer' and split_part(ref_id, ':', 2) in (${sql.join(
      hashes.map((h) => sql`${h}`),
      sql`, `,
    )}) order by id`);
  return rows.map((r) => r.kind);
}

describe('a payment sent back out of the merchant wallet', () => {
  it('behavior: of two payments of one payer and amount, the return clears the sent-back one, not the older; a reorg of it reopens the finding', async () => {
    const waiting = await kit.chain.transfer('USDC', 'payer:pr', kit.merchant, X);
    const underpaid = await kit.chain.transfer('USDC', 'payer:pr', kit.merchant, X);
    const returned = await kit.chain.transfer('USDC', 'merchant:st_a', await kit.chain.wallet('payer:pr'), X);
    await intent('ci_waiting', CheckoutStatus.MANUAL_OPERATION, waiting.txHash);
    await intent('ci_underpaid', CheckoutStatus.UNDERPAID, underpaid.txHash);
    await kit.indexUntilFinal(deps);
    const suspenseBefore = await suspense();

    // Within the grace: the failed intent's payment goes to suspense at once, the return clears
    // it; the payment of the intent still under review waits (not even taken up).
    expect(await applyNow()).toEqual({ applied: 2, deferred: 0, unwound: 0 });
    const { rows } = await kit.db.db.execute<{
      tx_hash: string;
      matched_as: string | null;
      matched_ref: string | null;
    }>(
      sql`select tx_hash, matched_as, matched_ref from chain_transfers
          where tx_hash in (${waiting.txHash}, ${underpaid.txHash}, ${returned.txHash}) order by block_number, log_index`,
    );
    expect(rows).toEqual([
      { tx_hash: waiting.txHash, matched_as: null, matched_ref: null },
      { tx_hash: underpaid.txHash, matched_as: 'transfer_in_unmatched', matched_ref: 'ci_underpaid' },
      { tx_hash: returned.txHash, matched_as: 'payment_returned', matched_ref: 'ci_underpaid' },
    ]);
    expect(await openFindings(underpaid.txHash)).toEqual([]);
    expect(await openFindings(returned.txHash)).toEqual([]);
    expect(await suspense()).toBe(suspenseBefore);

    // The return's block leaves the chain: its entry is reversed, the money is in suspense again,
    // and the payment's finding is open again for a person.
    await kit.db.db.execute(sql`update chain_transfers set state = 'orphaned', orphaned_at = now()
      where tx_hash = ${returned.txHash}`);
    expect(await applyNow()).toMatchObject({ unwound: 1 });
    expect(await suspense()).toBe(suspenseBefore - X);
    expect(await openFindings(underpaid.txHash)).toEqual(['unmatched_transfer_in']);
    expect(await openFindings(returned.txHash)).toEqual(['reorged_transfer']);
    for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
  });
});

describe('two failed payments of one payer and amount, one return', () => {
  it('behavior: the return clears the payment of the intent seen at SEND_BACK, not the older one that only failed (sim seed 52709)', async () => {
    const kept = await kit.chain.transfer('USDC', 'payer:pr', kit.merchant, X + 1n);
    const sentBack = await kit.chain.transfer('USDC', 'payer:pr', kit.merchant, X + 1n);
    const returned = await kit.chain.transfer(
      'USDC',
      'merchant:st_a',
      await kit.chain.wallet('payer:pr'),
      X + 1n,
    );
    await intent('ci_kept_underpaid', CheckoutStatus.UNDERPAID, kept.txHash);
    // Seen at SEND_BACK, then REJECTED: the status it ends in is a failure like the other's.
    await intent('ci_sent_back', CheckoutStatus.REJECTED, sentBack.txHash);
    await kit.db.db.execute(sql`
      insert into checkout_intent_status_history (intent_id, from_status, to_status, source, observed_at)
      values ('ci_sent_back', null, ${CheckoutStatus.SEND_BACK}, 'api', now()),
             ('ci_sent_back', ${CheckoutStatus.SEND_BACK}, ${CheckoutStatus.REJECTED}, 'api', now())`);
    await kit.indexUntilFinal(deps);

    await applyNow();
    expect(await matchedRows(kept.txHash, sentBack.txHash, returned.txHash)).toEqual([
      { tx_hash: kept.txHash, matched_as: 'transfer_in_unmatched', matched_ref: null },
      { tx_hash: sentBack.txHash, matched_as: 'transfer_in_unmatched', matched_ref: 'ci_sent_back' },
      { tx_hash: returned.txHash, matched_as: 'payment_returned', matched_ref: 'ci_sent_back' },
    ]);
    expect(await openFindings(kept.txHash)).toEqual(['unmatched_transfer_in']);
    expect(await openFindings(sentBack.txHash)).toEqual([]);
  });
});

describe('a payment sent back whose intent is learnt only after both transfers went to rule 9', () => {
  it('behavior: the pair is re-matched once the intent is known as sent back: the owner transfer is reversed and the suspense cleared, once', async () => {
    await applyLate(); // what the test above left waiting goes to rule 9 first
    const payer = await kit.chain.wallet('payer:late');
    await kit.chain.mint('USDC', payer, 100_000_000n);
    const paid = await kit.chain.transfer('USDC', 'payer:late', kit.merchant, X);
    const returned = await kit.chain.transfer('USDC', 'merchant:st_a', payer, X);
    await kit.indexUntilFinal(deps);
    const before = { suspense: await suspense(), owner: await usdc('equity:owner_transfers') };

    // No intent names the payment yet (a webhook delayed, a poll late): after the grace, the
    // payment goes to suspense and its return is an owner withdrawal, as rule 9 says.
    expect(await applyLate()).toEqual({ applied: 2, deferred: 0, unwound: 0 });
    expect(await matchedRows(paid.txHash, returned.txHash)).toEqual([
      { tx_hash: paid.txHash, matched_as: 'transfer_in_unmatched', matched_ref: null },
      { tx_hash: returned.txHash, matched_as: 'transfer_out_unmatched', matched_ref: null },
    ]);
    expect(await suspense()).toBe(before.suspense - X);
    expect(await usdc('equity:owner_transfers')).toBe(before.owner + X);

    // The intent is learnt now, sent back: the pair is recognisable, and the next pass re-matches it.
    await intent('ci_late_send_back', CheckoutStatus.SEND_BACK, paid.txHash);
    expect(await applyNow()).toEqual({ applied: 1, deferred: 0, unwound: 0 });
    expect(await matchedRows(paid.txHash, returned.txHash)).toEqual([
      { tx_hash: paid.txHash, matched_as: 'transfer_in_unmatched', matched_ref: 'ci_late_send_back' },
      { tx_hash: returned.txHash, matched_as: 'payment_returned', matched_ref: 'ci_late_send_back' },
    ]);
    expect(await entryKinds(paid.txHash, returned.txHash)).toEqual([
      'chain.transfer_in_unmatched',
      'chain.transfer_out_unmatched',
      'chain.transfer_out_unmatched.reversal',
      'chain.payment_returned',
    ]);
    expect(await suspense()).toBe(before.suspense);
    expect(await usdc('equity:owner_transfers')).toBe(before.owner);
    expect(await openFindings(paid.txHash)).toEqual([]);
    expect(await openFindings(returned.txHash)).toEqual([]);

    // Once: the next passes, and the intent's failure after SEND_BACK, change nothing.
    expect(await applyNow()).toEqual({ applied: 0, deferred: 0, unwound: 0 });
    await kit.db.db.execute(
      sql`update checkout_intents set status = ${CheckoutStatus.UNDERPAID} where id = 'ci_late_send_back'`,
    );
    expect(await applyLate()).toEqual({ applied: 0, deferred: 0, unwound: 0 });
    expect(await entryKinds(paid.txHash, returned.txHash)).toHaveLength(4);

    // The return's block leaves the chain: rule 3 reverses the return, the owner transfer stays
    // reversed, and the payment is in suspense again with its finding open.
    await kit.db.db.execute(sql`update chain_transfers set state = 'orphaned', orphaned_at = now()
      where tx_hash = ${returned.txHash}`);
    expect(await applyNow()).toMatchObject({ unwound: 1 });
    expect(await suspense()).toBe(before.suspense - X);
    expect(await usdc('equity:owner_transfers')).toBe(before.owner);
    expect(await openFindings(paid.txHash)).toEqual(['unmatched_transfer_in']);
    for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
  });

  it('behavior: two matchers at once re-match a pair once', async () => {
    const payer = await kit.chain.wallet('payer:twice');
    await kit.chain.mint('USDC', payer, 100_000_000n);
    const paid = await kit.chain.transfer('USDC', 'payer:twice', kit.merchant, X);
    const returned = await kit.chain.transfer('USDC', 'merchant:st_a', payer, X);
    await kit.indexUntilFinal(deps);
    expect(await applyLate()).toMatchObject({ applied: 2, deferred: 0 });
    const before = { suspense: await suspense(), owner: await usdc('equity:owner_transfers') };
    await intent('ci_late_failed', CheckoutStatus.REJECTED, paid.txHash);
    const outcomes = await Promise.all([applyNow(), applyNow(), applyNow()]);
    expect(outcomes.reduce((n, o) => n + o.applied, 0)).toBe(1);
    expect(await entryKinds(paid.txHash, returned.txHash)).toEqual([
      'chain.transfer_in_unmatched',
      'chain.transfer_out_unmatched',
      'chain.transfer_out_unmatched.reversal',
      'chain.payment_returned',
    ]);
    expect(await suspense()).toBe(before.suspense + X);
    expect(await usdc('equity:owner_transfers')).toBe(before.owner - X);
    for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
  });
});
