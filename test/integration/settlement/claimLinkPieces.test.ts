import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { watchedWallets } from '../../../src/chain/watchedWallets.ts';
import { createManualClock } from '../../../src/clock.ts';
import { trialBalance } from '../../../src/ledger/balances.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { claimLinkFunded } from '../../../src/ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { markCancelled } from '../../../src/payouts/closeLink.ts';
import { refundsOverdue } from '../../../src/payouts/refundsOverdue.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { batchSender } from '../../helpers/batchSend.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * A claim link's funding in pieces (docs/accounting.md, rule 5 and "Pieces and bundles"): a partial
 * deposit topped up, a link funded twice, a funding the service sent again after a reorg. Every
 * custody transfer into a known pool of an open link is a piece of its funding, whatever its hash;
 * the fee is what the pieces exceed A by. And a cancel the service accepted while the claim was
 * already on chain (rule 6 out of the receivable, `claimed_after_cancel`).
 *
 * Each test checks the store's books as a whole (owner transfers, payout fees, payouts, claim_pool,
 * refund_receivable, as the change the test made) and custody's ledger against balanceOf.
 */
const kit = await createIndexerKit('claim_link_pieces', { reorgWindow: 16 });
const deps = kit.deps();
const clock = createManualClock(new Date());
const applyDeps = kit.applyDeps(clock, 60_000);
const { accounts } = kit;
const USDT = kit.registry.token(CHAIN_ID, kit.chain.tokens.USDT.address)!;
const FEE = 500_000n;
const feeWallet = await kit.chain.wallet('fees:31337');
const jobDeps = { db: kit.db.db, chains: kit.registry, accounts, logger: deps.logger };
const batch = batchSender((method, params) => kit.raw(method, params));

await kit.chain.mint('USDT', kit.custody, 1_000_000_000n);

async function settle(): Promise<void> {
  await kit.indexUntilFinal(deps);
  await settleTransfers(applyDeps, CHAIN_ID);
}

/** A payout of `amount` as createPayout leaves it (rule 5 posted), its answer naming `fundingTxHash`. */
async function createdPayout(linkId: string, amount: bigint, fundingTxHash: string): Promise<void> {
  const decimal = formatDecimalAmount(amount, USDT.decimals);
  await kit.db.db.execute(sql`
    insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                         claim_link_id, link_status, funded_at, funding_tx_hash)
    values (${`po_${linkId}`}, 'st_a', ${`ref-${linkId}`}, ${decimal}, 1, ${CHAIN_ID}, ${USDT.address}, 'created',
            ${linkId}, 'link_sent', ${clock.now().toISOString()}::timestamptz, ${fundingTxHash})`);
  const funded = claimLinkFunded({
    storeId: 'st_a',
    claimLinkId: linkId,
    token: USDT,
    amount: decimal,
    occurredAt: clock.now(),
  });
  await postEntry(kit.db.db, funded.entry!, { accounts });
}

/** Custody pays `value` to the link's pool wallet (one transfer). */
async function fund(linkId: string, value: bigint) {
  return kit.chain.transfer('USDT', 'custody:biz_1', await kit.chain.wallet(`pool:${linkId}`), value);
}

const KINDS = [
  'equity:owner_transfers',
  'expense:payout_fees',
  'expense:payouts',
  'assets:claim_pool',
  'assets:refund_receivable',
] as const;

/** Store st_a's balances of the accounts a claim link moves (USDT on the test chain). */
async function storeBooks(): Promise<Record<(typeof KINDS)[number], bigint>> {
  const { rows } = await kit.db.db.execute<{ code: string; balance: string }>(sql`
    select a.code, sum(p.amount)::text as balance from ledger_postings p join ledger_accounts a on a.id = p.account_id
    where a.code like ${`%:st_a:${CHAIN_ID}:USDT`} group by a.code`);
  const of = (kind: string) =>
    BigInt(rows.find((r) => r.code === `${kind}:st_a:${CHAIN_ID}:USDT`)?.balance ?? '0');
  return Object.fromEntries(KINDS.map((k) => [k, of(k)])) as Record<(typeof KINDS)[number], bigint>;
}

/** What the test changed in the store's books since `before`. */
async function booksSince(before: Awaited<ReturnType<typeof storeBooks>>) {
  const now = await storeBooks();
  return Object.fromEntries(KINDS.map((k) => [k, now[k] - before[k]]));
}

/** On-chain custody balance less the ledger's custody accounts (every store): 0 when proven. */
async function custodyDrift(): Promise<bigint> {
  const { rows } = await kit.db.db.execute<{ balance: string | null }>(sql`
    select sum(p.amount)::text as balance from ledger_postings p join ledger_accounts a on a.id = p.account_id
    where a.code like ${`assets:custody:%:${CHAIN_ID}:USDT`}`);
  return (await kit.chain.balanceOf('USDT', kit.custody)) - BigInt(rows[0]?.balance ?? '0');
}

async function openFindings(linkId: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(sql`
    select kind from findings where ref_id = ${linkId} and resolved_at is null order by kind`);
  return rows.map((r) => r.kind);
}

/** Open findings about transfers (rule 9's), of this test's transactions. */
async function transferFindings(txHashes: string[]): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string; ref_id: string }>(sql`
    select kind, ref_id from findings where ref_type = 'chain_transfer' and resolved_at is null`);
  return rows.filter((r) => txHashes.some((h) => r.ref_id.includes(h))).map((r) => r.kind);
}

async function matchedAs(txHash: string): Promise<(string | null)[]> {
  const { rows } = await kit.db.db.execute<{ matched_as: string | null }>(sql`
    select matched_as from chain_transfers where tx_hash = ${txHash} and state = 'final' order by id`);
  return rows.map((r) => r.matched_as);
}

async function kinds(linkId: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(
    sql`select kind from ledger_entries where ref_id = ${linkId} order by id`,
  );
  return rows.map((r) => r.kind);
}

async function linkStatus(linkId: string) {
  const { rows } = await kit.db.db.execute<{ link_status: string; claimed_at: Date | null }>(
    sql`select link_status, claimed_at from payouts where claim_link_id = ${linkId}`,
  );
  return rows[0];
}

/** Whether the indexer's log filter (closed pools left out) still reads the link's pool. */
async function indexerWatches(linkId: string): Promise<boolean> {
  const pool = (await kit.chain.wallet(`pool:${linkId}`)).toLowerCase();
  const wallets = await watchedWallets(kit.db.db, { stores: kit.stores }, CHAIN_ID, {
    closedPools: 'exclude',
  });
  return wallets.some((w) => w.address === pool);
}

async function expectBalanced(): Promise<void> {
  for (const line of await trialBalance(kit.db.db)) expect.soft(line.net, line.asset).toBe(0n);
}

describe('claim-link funding in pieces', () => {
  it('behavior: a partial deposit topped up by a second transaction is one funding: its fee, the sweep and the claim are booked', async () => {
    const linkId = 'cl_topup';
    const before = await storeBooks();
    const first = await fund(linkId, 2_000_000n);
    await createdPayout(linkId, 3_000_000n, first.txHash);
    await settle();
    expect.soft(await openFindings(linkId)).toEqual(['funding_mismatch']);
    const shortfall = await kit.db.db.execute<{ shortfall: string }>(sql`
      select details->>'shortfall' as shortfall from findings where ref_id = ${linkId} and kind = 'funding_mismatch'`);
    expect.soft(shortfall.rows[0]?.shortfall).toBe('1');

    const topUp = await fund(linkId, 1_500_000n);
    await settle();
    expect.soft(await matchedAs(topUp.txHash)).toEqual(['claim_link_funding_fee']);
    expect.soft(await openFindings(linkId)).toEqual([]);

    const sweep = await kit.chain.transfer('USDT', `pool:${linkId}`, feeWallet, FEE);
    await settle();
    expect.soft(await matchedAs(sweep.txHash)).toEqual(['claim_link_fee_sweep']);
    expect.soft(await indexerWatches(linkId)).toBe(true);

    const claim = await kit.chain.transfer(
      'USDT',
      `pool:${linkId}`,
      await kit.chain.wallet('recipient:topup'),
      3_000_000n,
    );
    await settle();
    expect.soft(await matchedAs(claim.txHash)).toEqual(['claim_link_claimed']);
    expect.soft(await booksSince(before)).toEqual({
      'equity:owner_transfers': 0n,
      'expense:payout_fees': FEE,
      'expense:payouts': 3_000_000n,
      'assets:claim_pool': 0n,
      'assets:refund_receivable': 0n,
    });
    expect.soft(await custodyDrift()).toBe(0n);
    expect.soft(await transferFindings([first.txHash, topUp.txHash, sweep.txHash, claim.txHash])).toEqual([]);
    expect.soft(await openFindings(linkId)).toEqual([]);
    expect.soft(await linkStatus(linkId)).toMatchObject({ link_status: 'claimed' });
    expect.soft(await indexerWatches(linkId)).toBe(false);
    await expectBalanced();
  });

  it('behavior: a link funded twice, swept once, cancelled and refunded whole keeps only the fee the service kept', async () => {
    const linkId = 'cl_twice';
    const before = await storeBooks();
    const first = await fund(linkId, 3_000_000n + FEE);
    await createdPayout(linkId, 3_000_000n, first.txHash);
    await settle();
    const second = await fund(linkId, 3_000_000n + FEE);
    await settle();
    expect.soft(await matchedAs(second.txHash)).toEqual(['claim_link_funding_fee']);
    const sweep = await kit.chain.transfer('USDT', `pool:${linkId}`, feeWallet, FEE);
    await settle();
    expect.soft(await matchedAs(sweep.txHash)).toEqual(['claim_link_fee_sweep']);
    await kit.db.db.transaction((tx) =>
      markCancelled(tx, { chains: kit.registry, accounts, clock }, `po_${linkId}`, 'api'),
    );
    const refund = await kit.chain.transfer('USDT', `pool:${linkId}`, kit.custody, 6_000_000n + FEE);
    await settle();
    expect.soft(await matchedAs(refund.txHash)).toEqual(['claim_link_refunded']);
    expect.soft(await booksSince(before)).toEqual({
      'equity:owner_transfers': 0n,
      'expense:payout_fees': FEE,
      'expense:payouts': 0n,
      'assets:claim_pool': 0n,
      'assets:refund_receivable': 0n,
    });
    expect.soft(await custodyDrift()).toBe(0n);
    expect
      .soft(await transferFindings([first.txHash, second.txHash, sweep.txHash, refund.txHash]))
      .toEqual([]);
    expect.soft(await indexerWatches(linkId)).toBe(false);
    await expectBalanced();
  });

  it('behavior: a funding orphaned after link_sent and sent again under a new hash is the link funding; the claim is booked once', async () => {
    const linkId = 'cl_resent';
    const before = await storeBooks();
    const pool = await kit.chain.wallet(`pool:${linkId}`);
    await batch.approve(USDT.address, kit.custody); // deployed and approved before the reorg
    const first = await fund(linkId, 2_000_000n + FEE);
    await createdPayout(linkId, 2_000_000n, first.txHash);
    await settle();
    expect.soft(await matchedAs(first.txHash)).toEqual(['claim_link_funding_fee']);

    // The funding's block and the three after it are replaced by empty blocks; the service sends
    // the funding again, in another transaction.
    await kit.raw('anvil_reorg', [4, []]);
    await indexChainPass(deps, CHAIN_ID);
    expect.soft((await settleTransfers(applyDeps, CHAIN_ID)).unwound).toBe(1);
    const again = await batch.send(USDT.address, kit.custody, [pool], [2_000_000n + FEE]);
    expect.soft(again.txHash).not.toBe(first.txHash);
    await settle();
    expect.soft(await matchedAs(again.txHash)).toEqual(['claim_link_funding_fee']);

    const sweep = await kit.chain.transfer('USDT', `pool:${linkId}`, feeWallet, FEE);
    await settle();
    expect.soft(await matchedAs(sweep.txHash)).toEqual(['claim_link_fee_sweep']);
    const claim = await kit.chain.transfer(
      'USDT',
      `pool:${linkId}`,
      await kit.chain.wallet('recipient:resent'),
      2_000_000n,
    );
    await settle();
    expect.soft(await matchedAs(claim.txHash)).toEqual(['claim_link_claimed']);
    expect.soft((await kinds(linkId)).filter((k) => k === 'claim_link.claimed')).toHaveLength(1);
    expect.soft(await booksSince(before)).toEqual({
      'equity:owner_transfers': 0n,
      'expense:payout_fees': FEE,
      'expense:payouts': 2_000_000n,
      'assets:claim_pool': 0n,
      'assets:refund_receivable': 0n,
    });
    expect.soft(await custodyDrift()).toBe(0n);
    expect.soft(await transferFindings([again.txHash, sweep.txHash, claim.txHash])).toEqual([]);
    await expectBalanced();
  });
});

describe('a cancel that races a claim', () => {
  it('behavior: a claim final after the service accepted our cancel is booked out of the receivable; the overdue refund resolves', async () => {
    const linkId = 'cl_cancel_race';
    const before = await storeBooks();
    const funding = await fund(linkId, 2_000_000n + FEE);
    await createdPayout(linkId, 2_000_000n, funding.txHash);
    await settle();
    await kit.chain.transfer('USDT', `pool:${linkId}`, feeWallet, FEE);
    await settle();
    // The recipient claims; the indexer has stored the claim (pending) when the cancel succeeds.
    const claim = await kit.chain.transfer(
      'USDT',
      `pool:${linkId}`,
      await kit.chain.wallet('recipient:race'),
      2_000_000n,
    );
    await indexChainPass(deps, CHAIN_ID);
    await kit.db.db.transaction((tx) =>
      markCancelled(tx, { chains: kit.registry, accounts, clock }, `po_${linkId}`, 'api'),
    );
    expect.soft(await openFindings(linkId)).toEqual(['cancel_races_pool_outflow']);
    await refundsOverdue({ ...jobDeps, refundGraceMs: 0 }, clock.now());
    expect.soft(await openFindings(linkId)).toEqual(['cancel_races_pool_outflow', 'refund_overdue']);

    await settle();
    expect.soft(await matchedAs(claim.txHash)).toEqual(['claim_link_claimed']);
    expect
      .soft(await kinds(linkId))
      .toEqual(['claim_link.funded', 'claim_link.funding_fee', 'claim_link.cancelled', 'claim_link.claimed']);
    expect.soft(await booksSince(before)).toEqual({
      'equity:owner_transfers': 0n,
      'expense:payout_fees': FEE,
      'expense:payouts': 2_000_000n,
      'assets:claim_pool': 0n,
      'assets:refund_receivable': 0n,
    });
    expect.soft(await linkStatus(linkId)).toMatchObject({ link_status: 'claimed' });
    expect.soft(await openFindings(linkId)).toEqual(['claimed_after_cancel']);
    await refundsOverdue({ ...jobDeps, refundGraceMs: 0 }, clock.now());
    expect.soft(await openFindings(linkId)).toEqual(['claimed_after_cancel']);
    expect.soft(await custodyDrift()).toBe(0n);
    await expectBalanced();
  });
});
