import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { watchedWallets } from '../../../src/chain/watchedWallets.ts';
import { createManualClock } from '../../../src/clock.ts';
import { balances, trialBalance } from '../../../src/ledger/balances.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { claimLinkFunded } from '../../../src/ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { markCancelled } from '../../../src/payouts/closeLink.ts';
import { refundsOverdue } from '../../../src/payouts/refundsOverdue.ts';
import { proveBalances } from '../../../src/recon/balanceProofs.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { batchSender } from '../../helpers/batchSend.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * A cancelled claim link whose refund the service pays back to custody in several pieces
 * (docs/accounting.md, rule 8), on a real anvil and PostgreSQL: two transactions, or one
 * transaction with two Transfer logs. Each piece clears what it can of the link's
 * refund_receivable; only the piece that clears it sets refunded_at, and only money beyond the
 * receivable (a funding overpayment returned) is credited to payout_fees. Booking the first piece
 * as the whole refund would book the rest of the receivable as fees kept, and the next piece, with
 * no receivable left, as unexplained money in suspense: fees and suspense both wrong by the piece.
 */
const kit = await createIndexerKit('refund_in_pieces');
const deps = kit.deps();
const clock = createManualClock(new Date());
const applyDeps = kit.applyDeps(clock, 60_000);
const { accounts } = kit;
const USDT = kit.registry.token(CHAIN_ID, kit.chain.tokens.USDT.address)!;
const FEE = 500_000n;
const LINK = 3_000_000n;
/** REFUND_GRACE_HOURS' default (24). */
const REFUND_GRACE_MS = 24 * 3_600_000;
const feeWallet = await kit.chain.wallet('fees:31337');

await kit.chain.mint('USDT', kit.custody, 1_000_000_000n);

async function settle(): Promise<void> {
  await kit.indexUntilFinal(deps);
  await settleTransfers(applyDeps, CHAIN_ID);
}

/**
 * A link of LINK USDT of store st_a as createPayout leaves it (row created, rule 5 posted), funded
 * on chain with LINK + FEE and its fee swept to the service, all final and matched, then cancelled
 * (rule 7: LINK in refund_receivable). Returns the pool's wallet label.
 */
async function cancelledLink(linkId: string): Promise<string> {
  const pool = `pool:${linkId}`;
  const funding = await kit.chain.transfer('USDT', 'custody:biz_1', await kit.chain.wallet(pool), LINK + FEE);
  const payoutId = `po_${linkId}`;
  const amount = formatDecimalAmount(LINK, USDT.decimals);
  await kit.db.db.execute(sql`
    insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                         claim_link_id, link_status, funded_at, funding_tx_hash)
    values (${payoutId}, 'st_a', ${`ref-${linkId}`}, ${amount}, 1, ${CHAIN_ID}, ${USDT.address}, 'created',
            ${linkId}, 'link_sent', ${clock.now().toISOString()}::timestamptz, ${funding.txHash})`);
  const funded = claimLinkFunded({
    storeId: 'st_a',
    claimLinkId: linkId,
    token: USDT,
    amount,
    occurredAt: clock.now(),
  });
  await postEntry(kit.db.db, funded.entry!, { accounts });
  await settle();
  await kit.chain.transfer('USDT', pool, feeWallet, FEE);
  await settle();
  await kit.db.db.transaction((tx) =>
    markCancelled(tx, { chains: kit.registry, accounts, clock }, payoutId, 'api'),
  );
  expect(await held(linkId)).toEqual({ 'assets:refund_receivable': LINK, 'expense:payout_fees': FEE });
  return pool;
}

const batch = batchSender((method, params) => kit.raw(method, params));

/** One transaction paying `values` from the labelled wallet to custody, one log each, in this order. */
/** Whether the indexer's log filter (closed pools left out) reads `address`. */
async function indexerWatches(address: string): Promise<boolean> {
  const wallets = await watchedWallets(kit.db.db, { stores: kit.stores }, CHAIN_ID, {
    closedPools: 'exclude',
  });
  return wallets.some((w) => w.address === address);
}

async function refundInOneTransaction(fromLabel: string, values: bigint[]) {
  const from = await kit.chain.wallet(fromLabel);
  await batch.approve(USDT.address, from);
  return batch.send(
    USDT.address,
    from,
    values.map(() => kit.custody),
    values,
  );
}

/** The link's non-zero balances by account kind (its own entries), but custody, which funded it. */
async function held(linkId: string): Promise<Record<string, bigint>> {
  const { rows } = await kit.db.db.execute<{ kind: string; balance: string }>(sql`
    select split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) as kind, sum(p.amount)::text as balance
    from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
    where e.ref_type = 'claim_link' and e.ref_id = ${linkId} and a.code not like 'assets:custody:%'
    group by 1 order by 1`);
  return Object.fromEntries(rows.filter((r) => r.balance !== '0').map((r) => [r.kind, BigInt(r.balance)]));
}

/** The lines of the link's refund entries, entry by entry: `account-kind amount`. */
async function refundLines(linkId: string): Promise<string[][]> {
  const { rows } = await kit.db.db.execute<{ id: string; line: string }>(sql`
    select e.id::text, split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) || ' ' || p.amount::text as line
    from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
    where e.ref_id = ${linkId} and e.kind = 'claim_link.refunded'
    order by e.id, p.amount desc, a.code`);
  const byEntry = new Map<string, string[]>();
  for (const r of rows) byEntry.set(r.id, [...(byEntry.get(r.id) ?? []), r.line]);
  return [...byEntry.values()];
}

async function refundedAt(linkId: string): Promise<Date | null> {
  const { rows } = await kit.db.db.execute<{ refunded_at: Date | null }>(
    sql`select refunded_at from payouts where claim_link_id = ${linkId}`,
  );
  return rows[0]?.refunded_at ?? null;
}

async function matchedAs(txHash: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ matched_as: string }>(sql`
    select matched_as from chain_transfers where tx_hash = ${txHash} order by log_index`);
  return rows.map((r) => r.matched_as);
}

/** Open findings about the link or about these transfers: `kind`. */
async function openFindings(linkId: string, txHashes: string[]): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(sql`
    select kind from findings
    where resolved_at is null
      and (ref_id = ${linkId} or ${sql.join(
        txHashes.map((h) => sql`ref_id like ${`${CHAIN_ID}:${h.toLowerCase()}:%`}`),
        sql` or `,
      )})`);
  return rows.map((r) => r.kind).sort();
}

/** Suspense entries booked from these transfers (rule 9 in). */
async function suspenseEntries(txHashes: string[]): Promise<number> {
  const { rows } = await kit.db.db.execute(sql`
    select 1 from ledger_entries where kind = 'chain.transfer_in_unmatched'
      and (${sql.join(
        txHashes.map((h) => sql`ref_id like ${`${CHAIN_ID}:${h.toLowerCase()}:%`}`),
        sql` or `,
      )})`);
  return rows.length;
}

async function suspense(): Promise<bigint> {
  let sum = 0n;
  for (const b of await balances(kit.db.db, { storeId: 'st_a' })) {
    if (b.symbol === 'USDT' && b.code.startsWith('assets:suspense:')) sum += b.balance;
  }
  return sum;
}

/** Custody's USDT balance proof: ok, and ledger minus balanceOf. */
async function custodyProof() {
  const proofs = await proveBalances({
    db: kit.db.db,
    config: { stores: kit.stores, chains: kit.registry },
    rpcs: new Map([[CHAIN_ID, deps.rpc]]),
    clock,
  });
  const p = proofs.find((x) => x.role === 'custody' && x.symbol === 'USDT');
  return { ok: p?.ok ?? null, drift: p?.chainBalance == null ? null : p.ledgerBalance - p.chainBalance };
}

/**
 * A refund booked whole: none of its transfers in suspense, suspense as it was, no finding open
 * about the link or those transfers, custody proven against the chain, the books balanced.
 */
async function expectWhole(linkId: string, txHashes: string[], suspenseBefore: bigint): Promise<void> {
  expect(await suspenseEntries(txHashes)).toBe(0);
  expect(await suspense()).toBe(suspenseBefore);
  expect(await openFindings(linkId, txHashes)).toEqual([]);
  expect(await custodyProof()).toEqual({ ok: true, drift: 0n });
  await expectBalanced();
}

async function expectBalanced(): Promise<void> {
  for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
}

// The owner's top-up of custody is booked (rule 9) before any link exists.
await settle();

/** Each piece of 2 + 1 clears that much of the receivable: no fees, nothing in suspense. */
const piecesOf2And1 = [
  ['assets:custody 2000000', 'assets:refund_receivable -2000000'],
  ['assets:custody 1000000', 'assets:refund_receivable -1000000'],
];

describe('a cancel refund paid back to custody in pieces', () => {
  it('behavior: two transactions of 2 and 1 for a 3 link each clear their part of the receivable; refunded_at only once it is cleared', async () => {
    const linkId = 'cl_pieces_two_tx';
    const pool = await cancelledLink(linkId);
    const suspenseBefore = await suspense();

    const first = await kit.chain.transfer('USDT', pool, kit.custody, 2_000_000n);
    await settle();
    expect(await refundLines(linkId)).toEqual(piecesOf2And1.slice(0, 1));
    // 1 is still owed: the link is not refunded yet.
    expect(await held(linkId)).toEqual({
      'assets:refund_receivable': 1_000_000n,
      'expense:payout_fees': FEE,
    });
    expect(await refundedAt(linkId)).toBeNull();
    // The pool owes more: the indexer's log filter still reads it (a refunded link's pool leaves it).
    const poolAddress = (await kit.chain.wallet(pool)).toLowerCase();
    expect(await indexerWatches(poolAddress)).toBe(true);

    const second = await kit.chain.transfer('USDT', pool, kit.custody, 1_000_000n);
    await settle();
    expect(await refundLines(linkId)).toEqual(piecesOf2And1);
    expect(await indexerWatches(poolAddress)).toBe(false);
    // A piece that left money owed is named as such (the pool stays watched); the clearing one closes it.
    expect(await matchedAs(first.txHash)).toEqual(['claim_link_refund_piece']);
    expect(await matchedAs(second.txHash)).toEqual(['claim_link_refunded']);
    // Only the funding fee stays in payout_fees; nothing owed, nothing in suspense.
    expect(await held(linkId)).toEqual({ 'expense:payout_fees': FEE });
    expect(await refundedAt(linkId)).not.toBeNull();
    await expectWhole(linkId, [first.txHash, second.txHash], suspenseBefore);
  });

  it('behavior: one transaction with two logs of 2 and 1 for a 3 link clears the receivable piece by piece', async () => {
    const linkId = 'cl_pieces_two_logs';
    const pool = await cancelledLink(linkId);
    const suspenseBefore = await suspense();

    const refund = await refundInOneTransaction(pool, [2_000_000n, 1_000_000n]);
    await settle();
    expect(await refundLines(linkId)).toEqual(piecesOf2And1);
    expect(await matchedAs(refund.txHash)).toEqual(['claim_link_refund_piece', 'claim_link_refunded']);
    expect(await held(linkId)).toEqual({ 'expense:payout_fees': FEE });
    expect(await refundedAt(linkId)).not.toBeNull();
    await expectWhole(linkId, [refund.txHash], suspenseBefore);
  });

  it('behavior: a refund that never completes (2 of 3) leaves 1 owed, no fees from it, and refund_overdue after the grace', async () => {
    const linkId = 'cl_pieces_short';
    const pool = await cancelledLink(linkId);
    const cancelledAt = (
      await kit.db.db.execute<{ cancelled_at: Date }>(
        sql`select cancelled_at from payouts where claim_link_id = ${linkId}`,
      )
    ).rows[0]!.cancelled_at;
    const refund = await kit.chain.transfer('USDT', pool, kit.custody, 2_000_000n);
    await settle();
    expect(await refundLines(linkId)).toEqual(piecesOf2And1.slice(0, 1));
    expect(await held(linkId)).toEqual({
      'assets:refund_receivable': 1_000_000n,
      'expense:payout_fees': FEE,
    });
    expect(await refundedAt(linkId)).toBeNull();

    // The rest never comes: once REFUND_GRACE_HOURS have passed since the cancel, a person is told.
    const jobDeps = { db: kit.db.db, logger: deps.logger, refundGraceMs: REFUND_GRACE_MS };
    const at = (ms: number) => new Date(new Date(cancelledAt).getTime() + ms);
    await refundsOverdue(jobDeps, at(REFUND_GRACE_MS - 60_000));
    expect(await openFindings(linkId, [refund.txHash])).toEqual([]);
    await refundsOverdue(jobDeps, at(REFUND_GRACE_MS + 60_000));
    expect(await openFindings(linkId, [refund.txHash])).toEqual(['refund_overdue']);
    expect(await custodyProof()).toEqual({ ok: true, drift: 0n });
    await expectBalanced();
  });

  it('behavior: pieces of 2 and 2 for a 3 link clear the receivable and credit the 1 beyond it to payout_fees; nothing in suspense', async () => {
    const linkId = 'cl_pieces_over';
    const pool = await cancelledLink(linkId);
    // The service returns more than the link: the pool holds it (a funding overpayment).
    await kit.chain.mint('USDT', await kit.chain.wallet(pool), 1_000_000n);
    await settle();
    const suspenseBefore = await suspense();

    const first = await kit.chain.transfer('USDT', pool, kit.custody, 2_000_000n);
    const second = await kit.chain.transfer('USDT', pool, kit.custody, 2_000_000n);
    await settle();
    expect(await refundLines(linkId)).toEqual([
      ['assets:custody 2000000', 'assets:refund_receivable -2000000'],
      ['assets:custody 2000000', 'assets:refund_receivable -1000000', 'expense:payout_fees -1000000'],
    ]);
    expect(await held(linkId)).toEqual({ 'expense:payout_fees': FEE - 1_000_000n });
    expect(await refundedAt(linkId)).not.toBeNull();
    await expectWhole(linkId, [first.txHash, second.txHash], suspenseBefore);
  });

  it('error: a piece arriving once the receivable is cleared goes to suspense with claim_link_refund_unexpected', async () => {
    const linkId = 'cl_pieces_after';
    const pool = await cancelledLink(linkId);
    await kit.chain.mint('USDT', await kit.chain.wallet(pool), 1_000_000n);
    await settle();
    const whole = await kit.chain.transfer('USDT', pool, kit.custody, LINK);
    await settle();
    expect(await refundLines(linkId)).toEqual([
      ['assets:custody 3000000', 'assets:refund_receivable -3000000'],
    ]);
    expect(await refundedAt(linkId)).not.toBeNull();
    const suspenseBefore = await suspense();

    const extra = await kit.chain.transfer('USDT', pool, kit.custody, 1_000_000n);
    await settle();
    expect(await matchedAs(extra.txHash)).toEqual(['transfer_in_unmatched']);
    expect(await refundLines(linkId)).toHaveLength(1);
    expect(await suspense()).toBe(suspenseBefore - 1_000_000n);
    expect(await openFindings(linkId, [whole.txHash, extra.txHash])).toEqual([
      'claim_link_refund_unexpected',
      'unmatched_transfer_in',
    ]);
    expect(await custodyProof()).toEqual({ ok: true, drift: 0n });
    await expectBalanced();
  });
});
