import { sql } from 'drizzle-orm';
import { encodeFunctionData, parseAbi } from 'viem';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { watchedWallets } from '../../../src/chain/watchedWallets.ts';
import { createManualClock } from '../../../src/clock.ts';
import { trialBalance } from '../../../src/ledger/balances.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { claimLinkFunded } from '../../../src/ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { expireClaimLinks } from '../../../src/payouts/expireClaimLinks.ts';
import { refundsOverdue } from '../../../src/payouts/refundsOverdue.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { batchSender } from '../../helpers/batchSend.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * What leaves a claim link's pool (docs/accounting.md, rules 6 to 8) when the simple story does
 * not hold: a claim that becomes final after our expiry job ran, a reorg of such a claim, the
 * service's fee sweep when the fee equals the link amount, a claim of another value, and a refund
 * for a link whose books hold no receivable. And what funds it (rule 5 on chain): fundings matched
 * by amount after a lost create answer (never into a wallet with a role, within a fee bound, not
 * before the payout existed, the smallest fee first), and fundings of several logs or links in one
 * transaction.
 */
const kit = await createIndexerKit('claim_link_transfers', { reorgWindow: 16 });
const deps = kit.deps();
const clock = createManualClock(new Date());
const applyDeps = kit.applyDeps(clock, 60_000);
const { accounts } = kit;
const USDT = kit.registry.token(CHAIN_ID, kit.chain.tokens.USDT.address)!;
const FEE = 500_000n;
const DAY_MS = 86_400_000;
const jobDeps = { db: kit.db.db, chains: kit.registry, accounts, logger: deps.logger };
const feeWallet = await kit.chain.wallet('fees:31337');

await kit.chain.mint('USDT', kit.custody, 1_000_000_000n);

async function settle(): Promise<void> {
  await kit.indexUntilFinal(deps);
  await settleTransfers(applyDeps, CHAIN_ID);
}

/**
 * The chain's time: its latest block's. This chain's clock runs ahead of ours (evm_increaseTime,
 * and blocks mined faster than one a second), so payouts are dated on it, as in production,
 * where a create attempt and the funding it pays are dated by the same wall clock.
 */
async function chainNow(): Promise<Date> {
  const block = (await kit.raw('eth_getBlockByNumber', ['latest', false])) as { timestamp: string };
  return new Date(Number(BigInt(block.timestamp)) * 1000);
}

/**
 * A payout of `amount` (base units) as createPayout leaves it: row created, rule 5 posted, funded
 * at the clock's now. `fundingTxHash` null: the answer that carried it was lost (an idempotent
 * retry answered), so the chain side matches its funding by amount. `createdAt`: the row's
 * creation and last write, its create attempts (default: the chain's now).
 */
async function createdPayout(
  linkId: string,
  amount: bigint,
  fundingTxHash: string | null,
  createdAt?: Date,
): Promise<void> {
  const decimal = formatDecimalAmount(amount, USDT.decimals);
  const created = (createdAt ?? (await chainNow())).toISOString();
  await kit.db.db.execute(sql`
    insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                         claim_link_id, link_status, funded_at, funding_tx_hash, created_at, updated_at)
    values (${`po_${linkId}`}, 'st_a', ${`ref-${linkId}`}, ${decimal}, 1, ${CHAIN_ID}, ${USDT.address}, 'created',
            ${linkId}, 'link_sent', ${clock.now().toISOString()}::timestamptz, ${fundingTxHash},
            ${created}::timestamptz, ${created}::timestamptz)`);
  const funded = claimLinkFunded({
    storeId: 'st_a',
    claimLinkId: linkId,
    token: USDT,
    amount: decimal,
    occurredAt: clock.now(),
  });
  await postEntry(kit.db.db, funded.entry!, { accounts });
}

/** Custody pays `value` to the link's pool wallet (one transfer, one log). */
async function fund(linkId: string, value: bigint) {
  return kit.chain.transfer('USDT', 'custody:biz_1', await kit.chain.wallet(`pool:${linkId}`), value);
}

/**
 * A payout of `amount` (base units) as createPayout leaves it, funded on chain with amount + FEE
 * and the fee swept to the service, both final and matched: the pool is learnt. Returns the
 * pool's wallet label.
 */
async function fundedLink(linkId: string, amount: bigint, options: { sweep?: boolean } = {}) {
  const funding = await fund(linkId, amount + FEE);
  await createdPayout(linkId, amount, funding.txHash);
  if (options.sweep !== false) {
    await settle();
    await kit.chain.transfer('USDT', `pool:${linkId}`, feeWallet, FEE);
  }
  await settle();
  return `pool:${linkId}`;
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

async function kinds(linkId: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(
    sql`select kind from ledger_entries where ref_id = ${linkId} order by id`,
  );
  return rows.map((r) => r.kind);
}

async function payout(linkId: string) {
  const { rows } = await kit.db.db.execute<{
    link_status: string;
    claimed_at: Date | null;
    expired_at: Date | null;
    refunded_at: Date | null;
  }>(
    sql`select link_status, claimed_at, expired_at, refunded_at from payouts where claim_link_id = ${linkId}`,
  );
  return rows[0];
}

async function openFindings(linkId: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(sql`
    select kind from findings where ref_id = ${linkId} and resolved_at is null order by kind`);
  return rows.map((r) => r.kind);
}

async function matchedAs(txHash: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ matched_as: string }>(sql`
    select matched_as from chain_transfers where tx_hash = ${txHash} order by id`);
  return rows.map((r) => r.matched_as);
}

async function expectBalanced(): Promise<void> {
  for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
}

describe('claim-link transfers out of the pool', () => {
  it('behavior: a claim final after our expiry job ran is booked out of the receivable; the expiry refund finding resolves', async () => {
    const linkId = 'cl_late';
    const pool = await fundedLink(linkId, 3_000_000n);
    // The recipient claims just before the 14 days end; the job runs before the indexer stores it.
    const claim = await kit.chain.transfer(
      'USDT',
      pool,
      await kit.chain.wallet('recipient:late'),
      3_000_000n,
    );
    clock.advance(14 * DAY_MS + 60_000);
    expect(await expireClaimLinks(jobDeps, clock.now())).toBe(1);
    expect(await held(linkId)).toMatchObject({ 'assets:refund_receivable': 3_000_000n });
    await refundsOverdue({ ...jobDeps, refundGraceMs: 0 }, clock.now());
    expect(await openFindings(linkId)).toEqual(['expiry_refund_overdue']);

    await settle();
    expect(await matchedAs(claim.txHash)).toEqual(['claim_link_claimed']);
    expect(await kinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.expired',
      'claim_link.claimed',
    ]);
    expect(await held(linkId)).toEqual({ 'expense:payout_fees': FEE, 'expense:payouts': 3_000_000n });
    expect(await payout(linkId)).toMatchObject({
      link_status: 'claimed',
      expired_at: null,
      refunded_at: null,
    });
    expect(await openFindings(linkId)).toEqual(['claimed_after_expiry']);
    // The job that runs next neither reopens the overdue refund nor expires the link again.
    await refundsOverdue({ ...jobDeps, refundGraceMs: 0 }, clock.now());
    expect(await openFindings(linkId)).toEqual(['claimed_after_expiry']);
    expect(await expireClaimLinks(jobDeps, clock.now())).toBe(0);

    // Idempotent: another pass books nothing more.
    expect(await settleTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 0, unwound: 0 });
    expect(await kinds(linkId)).toHaveLength(4);
    await expectBalanced();
  });

  it('behavior: a reorg of the late claim owes the receivable again (the expiry replays); its new inclusion books the claim once more', async () => {
    const linkId = 'cl_late_reorg';
    const pool = await fundedLink(linkId, 2_000_000n);
    const claim = await kit.chain.transfer(
      'USDT',
      pool,
      await kit.chain.wallet('recipient:reorg'),
      2_000_000n,
    );
    const rawClaim = (await kit.raw('eth_getRawTransactionByHash', [claim.txHash])) as string;
    clock.advance(14 * DAY_MS + 60_000);
    expect(await expireClaimLinks(jobDeps, clock.now())).toBe(1);
    await settle();
    expect(await held(linkId)).toEqual({ 'expense:payout_fees': FEE, 'expense:payouts': 2_000_000n });

    // The claim's block and the three mined after it are replaced by empty blocks.
    await kit.raw('anvil_reorg', [4, []]);
    await indexChainPass(deps, CHAIN_ID);
    expect((await settleTransfers(applyDeps, CHAIN_ID)).unwound).toBe(1);
    expect(await held(linkId)).toEqual({
      'assets:refund_receivable': 2_000_000n,
      'expense:payout_fees': FEE,
    });
    expect(await payout(linkId)).toMatchObject({ claimed_at: null });
    // The expiry job closes it again: the same entry, a replay, nothing new.
    expect(await expireClaimLinks(jobDeps, clock.now())).toBe(1);
    expect(await payout(linkId)).toMatchObject({ link_status: 'expired' });

    await kit.raw('eth_sendRawTransaction', [rawClaim]);
    await settle();
    expect(await matchedAs(claim.txHash)).toEqual(['claim_link_claimed', 'claim_link_claimed']);
    expect(await kinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.expired',
      'claim_link.claimed',
      'claim_link.claimed.reversal',
      'claim_link.claimed',
    ]);
    expect(await held(linkId)).toEqual({ 'expense:payout_fees': FEE, 'expense:payouts': 2_000_000n });
    expect(await payout(linkId)).toMatchObject({ link_status: 'claimed', expired_at: null });
    await expectBalanced();
    // The events tell the same story: the first claim is taken back by its own event, and the new
    // inclusion is announced again (the expiry, replayed, is the same event: nothing new).
    const { rows: events } = await kit.db.db.execute<{
      event_id: string;
      type: string;
      reverses: string | null;
    }>(sql`
      select event_id, type, payload->>'reverses' as reverses from event_outbox
      where type like 'payout.settled%' and payload->>'claim_link_id' = ${linkId} order by id`);
    const payoutId = events[0]?.event_id.split(':')[1];
    expect(events).toEqual([
      { event_id: `payout.settled:${payoutId}:expired`, type: 'payout.settled', reverses: null },
      { event_id: `payout.settled:${payoutId}:claimed`, type: 'payout.settled', reverses: null },
      {
        event_id: `payout.settled.reversed:${payoutId}:claimed`,
        type: 'payout.settled.reversed',
        reverses: `payout.settled:${payoutId}:claimed`,
      },
      { event_id: `payout.settled:${payoutId}:claimed:r1`, type: 'payout.settled', reverses: null },
    ]);
  });

  it('behavior: the expiry waits while the pool has sent money the chain side stored but has not booked', async () => {
    const linkId = 'cl_wait';
    const pool = await fundedLink(linkId, 4_000_000n);
    const claim = await kit.chain.transfer(
      'USDT',
      pool,
      await kit.chain.wallet('recipient:wait'),
      4_000_000n,
    );
    await indexChainPass(deps, CHAIN_ID); // stored, pending
    clock.advance(14 * DAY_MS + 60_000);
    expect(await expireClaimLinks(jobDeps, clock.now())).toBe(0);
    await kit.indexUntilFinal(deps); // final, not matched yet
    expect(await expireClaimLinks(jobDeps, clock.now())).toBe(0);

    await settleTransfers(applyDeps, CHAIN_ID);
    expect(await matchedAs(claim.txHash)).toEqual(['claim_link_claimed']);
    expect(await expireClaimLinks(jobDeps, clock.now())).toBe(0);
    expect(await kinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.claimed',
    ]);
    expect(await openFindings(linkId)).toEqual([]);
  });

  it('behavior: the fee sweep of a link whose fee equals its amount is not its claim; the claim after it is', async () => {
    const linkId = 'cl_sweep';
    const pool = await fundedLink(linkId, FEE);
    expect(await kinds(linkId)).toEqual(['claim_link.funded', 'claim_link.funding_fee']);
    expect(await payout(linkId)).toMatchObject({ link_status: 'link_sent', claimed_at: null });
    const swept = await kit.db.db.execute<{ matched_as: string }>(sql`
      select matched_as from chain_transfers where from_address = ${(await kit.chain.wallet(pool)).toLowerCase()}`);
    expect(swept.rows).toEqual([{ matched_as: 'claim_link_fee_sweep' }]);

    const claim = await kit.chain.transfer('USDT', pool, await kit.chain.wallet('recipient:sweep'), FEE);
    await settle();
    expect(await matchedAs(claim.txHash)).toEqual(['claim_link_claimed']);
    expect(await held(linkId)).toEqual({ 'expense:payout_fees': FEE, 'expense:payouts': FEE });
    expect(await openFindings(linkId)).toEqual([]);
    await expectBalanced();
  });

  it('behavior: a claim of another value is booked at the link amount with an amount_mismatch finding', async () => {
    const linkId = 'cl_other_value';
    const pool = await fundedLink(linkId, 2_000_000n);
    const claim = await kit.chain.transfer(
      'USDT',
      pool,
      await kit.chain.wallet('recipient:other'),
      1_900_000n,
    );
    await settle();
    expect(await matchedAs(claim.txHash)).toEqual(['claim_link_claimed']);
    expect(await held(linkId)).toEqual({ 'expense:payout_fees': FEE, 'expense:payouts': 2_000_000n });
    expect(await payout(linkId)).toMatchObject({ link_status: 'claimed' });
    expect(await openFindings(linkId)).toEqual(['amount_mismatch']);
    await expectBalanced();
  });

  it('error: a zero-value transferFrom(pool, custody, 0) sent by a stranger is neither refund nor claim: the link stays open and its later claim is booked', async () => {
    const linkId = 'cl_zero_refund';
    const pool = await fundedLink(linkId, 5_000_000n);
    const poolAddress = await kit.chain.wallet(pool);
    // ERC-20 lets anyone move 0 from any address without an allowance; it emits a Transfer.
    const stranger = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'; // anvil's second dev account: it signs
    const poison = (await kit.raw('eth_sendTransaction', [
      {
        from: stranger,
        to: USDT.address,
        data: encodeFunctionData({
          abi: parseAbi(['function transferFrom(address,address,uint256) returns (bool)']),
          functionName: 'transferFrom',
          args: [poolAddress, kit.custody, 0n],
        }),
      },
    ])) as string;
    await settle();
    expect(await matchedAs(poison)).toEqual(['ignored']);
    expect(await kinds(linkId)).toEqual(['claim_link.funded', 'claim_link.funding_fee']);
    expect(await held(linkId)).toEqual({ 'assets:claim_pool': 5_000_000n, 'expense:payout_fees': FEE });
    expect(await payout(linkId)).toMatchObject({ link_status: 'link_sent', refunded_at: null });
    expect(await openFindings(linkId)).toEqual([]);
    // The real claim afterwards is the link's claim (rule 6).
    await kit.chain.transfer('USDT', pool, await kit.chain.wallet('recipient:zero'), 5_000_000n);
    await settle();
    expect(await kinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.claimed',
    ]);
    expect(await payout(linkId)).toMatchObject({ link_status: 'claimed' });
    await expectBalanced();
  });

  it('error: money back to custody from a link our books saw claimed is not rule 8: suspense and a finding', async () => {
    const linkId = 'cl_claimed_refund';
    const pool = await fundedLink(linkId, 1_000_000n);
    // Something extra in the pool, so it can send money back after the claim.
    await kit.chain.mint('USDT', await kit.chain.wallet(pool), 1_000_000n);
    await kit.chain.transfer('USDT', pool, await kit.chain.wallet('recipient:claimed'), 1_000_000n);
    const back = await kit.chain.transfer('USDT', pool, kit.custody, 1_000_000n);
    await settle();
    expect(await matchedAs(back.txHash)).toEqual(['transfer_in_unmatched']);
    expect(await kinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.claimed',
    ]);
    expect(await held(linkId)).toEqual({ 'expense:payout_fees': FEE, 'expense:payouts': 1_000_000n });
    expect(await payout(linkId)).toMatchObject({ link_status: 'claimed', refunded_at: null });
    expect(await openFindings(linkId)).toEqual(['claim_link_refund_unexpected']);
    const suspense = await kit.db.db.execute(sql`
      select 1 from ledger_entries where kind = 'chain.transfer_in_unmatched' and metadata->>'tx_hash' = ${back.txHash}`);
    expect(suspense.rows).toHaveLength(1);
    await expectBalanced();
  });
});

/** What the chain side learnt of a link's funding: its pool, its funding hash and the fee booked. */
async function funding(linkId: string) {
  const { rows } = await kit.db.db.execute<{ pool_address: string | null; funding_tx_hash: string | null }>(
    sql`select pool_address, funding_tx_hash from payouts where claim_link_id = ${linkId}`,
  );
  return { ...rows[0], fee: (await held(linkId))['expense:payout_fees'] ?? 0n };
}

async function poolAddress(linkId: string): Promise<string> {
  return (await kit.chain.wallet(`pool:${linkId}`)).toLowerCase();
}

/** On-chain custody balance less the ledger's custody accounts (every store): 0 when proven. */
async function custodyDrift(): Promise<bigint> {
  const { rows } = await kit.db.db.execute<{ balance: string | null }>(sql`
    select sum(p.amount)::text as balance from ledger_postings p join ledger_accounts a on a.id = p.account_id
    where a.code like ${`assets:custody:%:${CHAIN_ID}:USDT`}`);
  return (await kit.chain.balanceOf('USDT', kit.custody)) - BigInt(rows[0]?.balance ?? '0');
}

/** The roles the matcher sees for an address (STORES_FILE wallets and learnt pools). */
async function rolesOf(address: string): Promise<string[]> {
  const wallets = await watchedWallets(kit.db.db, { stores: kit.stores }, CHAIN_ID);
  return wallets.filter((w) => w.address === address.toLowerCase()).map((w) => w.role);
}

/** A buyer pays `value` into the merchant wallet for a confirmed intent; returns the transaction. */
async function paymentIntoMerchant(label: string, value: bigint) {
  const buyer = await kit.chain.wallet(`buyer:${label}`);
  await kit.chain.mint('USDT', buyer, value);
  const paid = await kit.chain.transfer('USDT', `buyer:${label}`, kit.merchant, value);
  await kit.confirmedIntent(paid.txHash, {
    coins: formatDecimalAmount(value, USDT.decimals),
    observedAt: clock.now(),
  });
  return paid;
}

/**
 * Several transfers out of custody in ONE transaction (each its own Transfer log), as a service
 * may pay a pool's principal and fee apart, or fund several links at once.
 */
const batch = batchSender((method, params) => kit.raw(method, params));
let custodyApproved: Promise<void> | undefined;

/** One transaction paying each (link's pool, value) from custody, in this log order. */
async function fundInOneTransaction(payments: [linkId: string, value: bigint][]) {
  custodyApproved ??= batch.approve(USDT.address, kit.custody);
  await custodyApproved;
  const pools = await Promise.all(payments.map(([linkId]) => kit.chain.wallet(`pool:${linkId}`)));
  return batch.send(
    USDT.address,
    kit.custody,
    pools,
    payments.map(([, value]) => value),
  );
}

describe('claim-link fundings out of custody', () => {
  it.each([
    ['of 100 (the owner moving money)', 100_000_000n],
    ['shaped like its funding (amount + fee)', 5_000_000n + FEE],
  ])(
    'error: a custody move into the merchant wallet %s is not the funding of a payout whose answer was lost; the merchant wallet stays merchant',
    async (_name, value) => {
      const linkId = `cl_lost_merchant_${value}`;
      await createdPayout(linkId, 5_000_000n, null);
      const move = await kit.chain.transfer('USDT', 'custody:biz_1', kit.merchant, value);
      clock.advance(60_001); // the move into the merchant wallet has waited its grace: rule 9
      await settle();
      expect(await matchedAs(move.txHash)).toEqual(['transfer_in_unmatched,transfer_out_unmatched']);
      expect(await funding(linkId)).toEqual({ pool_address: null, funding_tx_hash: null, fee: 0n });
      expect(await rolesOf(kit.merchant)).toEqual(['merchant']);

      // Its real funding is matched, and a payment into the merchant wallet is still proven.
      const real = await fund(linkId, 5_000_000n + FEE);
      const paid = await paymentIntoMerchant(`after_move_${value}`, 2_000_000n);
      await settle();
      expect(await funding(linkId)).toEqual({
        pool_address: await poolAddress(linkId),
        funding_tx_hash: real.txHash,
        fee: FEE,
      });
      expect(await openFindings(linkId)).toEqual(['funding_matched_by_amount']);
      expect(await matchedAs(paid.txHash)).toEqual(['payment_proof']);
      expect(await custodyDrift()).toBe(0n);
      await expectBalanced();
    },
  );

  it('error: a custody outflow above a lost-answer payout plus the largest fee matched by amount is not its funding', async () => {
    const linkId = 'cl_lost_bound';
    await createdPayout(linkId, 10_000_000n, null);
    // The owner withdraws 50 to an exchange (nobody's wallet): it covers the 10, by far.
    const withdrawal = await kit.chain.transfer(
      'USDT',
      'custody:biz_1',
      await kit.chain.wallet('exchange:owner'),
      50_000_000n,
    );
    await settle();
    expect(await matchedAs(withdrawal.txHash)).toEqual(['transfer_out_unmatched']);
    expect(await funding(linkId)).toMatchObject({ pool_address: null, fee: 0n });

    await fund(linkId, 10_000_000n + FEE);
    await settle();
    expect(await funding(linkId)).toMatchObject({ pool_address: await poolAddress(linkId), fee: FEE });
    expect(await custodyDrift()).toBe(0n);
  });

  it.each([
    {
      name: 'the older payout is the smaller one (10 then 50, funded 50.5 then 10.5)',
      links: [
        ['cl_order_10', 10_000_000n],
        ['cl_order_50', 50_000_000n],
      ],
      fundings: [
        ['cl_order_50', 50_500_000n],
        ['cl_order_10', 10_500_000n],
      ],
    },
    {
      name: 'both cover each other (9.8 then 10, funded 10.1 then 10.3): the smallest fee wins',
      links: [
        ['cl_close_9_8', 9_800_000n],
        ['cl_close_10', 10_000_000n],
      ],
      fundings: [
        ['cl_close_10', 10_100_000n],
        ['cl_close_9_8', 10_300_000n],
      ],
    },
  ] as { name: string; links: [string, bigint][]; fundings: [string, bigint][] }[])(
    'behavior: lost-answer payouts funded in another order than created each get their own funding: $name',
    async ({ links, fundings }) => {
      for (const [linkId, amount] of links) await createdPayout(linkId, amount, null);
      for (const [linkId, value] of fundings) await fund(linkId, value);
      await settle();
      for (const [linkId, amount] of links) {
        const value = fundings.find(([l]) => l === linkId)![1];
        expect(await funding(linkId), linkId).toMatchObject({
          pool_address: await poolAddress(linkId),
          fee: value - amount,
        });
      }
      expect(await custodyDrift()).toBe(0n);
      await expectBalanced();
    },
  );

  it('behavior: a funding covering a near-equal payout created after its block goes to the payout created by then, though the other fee would be smaller', async () => {
    // Simulator seeds 9, 25 and 28 (near_equal_payouts): 10 funded 10.5 before 10.2 was created;
    // the smallest fee (0.3) gave 10.5 to 10.2, whose create call had not begun.
    const [first, second] = ['cl_near_10', 'cl_near_10_2'];
    await createdPayout(first, 10_000_000n, null);
    const firstFunding = await fund(first, 10_000_000n + FEE);
    const block = (await kit.raw('eth_getBlockByNumber', [
      `0x${firstFunding.blockNumber.toString(16)}`,
      false,
    ])) as { timestamp: string };
    // Two minutes after that block: inside the clock slack, so a candidate for it.
    await createdPayout(second, 10_200_000n, null, new Date((Number(block.timestamp) + 120) * 1000));
    await kit.raw('evm_increaseTime', [180]);
    const secondFunding = await fund(second, 10_200_000n + FEE);
    await settle();
    expect(await funding(first)).toEqual({
      pool_address: await poolAddress(first),
      funding_tx_hash: firstFunding.txHash,
      fee: FEE,
    });
    expect(await funding(second)).toEqual({
      pool_address: await poolAddress(second),
      funding_tx_hash: secondFunding.txHash,
      fee: FEE,
    });
    expect(await custodyDrift()).toBe(0n);
    await expectBalanced();
  });

  it('error: a custody outflow mined before the payout existed is not its funding', async () => {
    const linkId = 'cl_lost_later';
    const early = await kit.chain.transfer(
      'USDT',
      'custody:biz_1',
      await kit.chain.wallet('exchange:early'),
      10_200_000n,
    );
    const block = (await kit.raw('eth_getBlockByNumber', [`0x${early.blockNumber.toString(16)}`, false])) as {
      timestamp: string;
    };
    // The payout is created ten minutes after that block, and funded after that.
    const createdAt = new Date((Number(block.timestamp) + 600) * 1000);
    await createdPayout(linkId, 10_000_000n, null, createdAt);
    await kit.raw('evm_increaseTime', [900]);
    await fund(linkId, 10_000_000n + FEE);
    await settle();
    expect(await matchedAs(early.txHash)).toEqual(['transfer_out_unmatched']);
    expect(await funding(linkId)).toMatchObject({ pool_address: await poolAddress(linkId), fee: FEE });
    expect(await custodyDrift()).toBe(0n);
  });

  it('behavior: a funding paid to the pool in two logs of one transaction books its whole fee once; a reorg reverses and rebooks it', async () => {
    const linkId = 'cl_two_logs';
    const tx = await fundInOneTransaction([
      [linkId, 3_000_000n],
      [linkId, FEE],
    ]);
    await createdPayout(linkId, 3_000_000n, tx.txHash);
    await settle();
    expect(await matchedAs(tx.txHash)).toEqual(['claim_link_funding_fee', 'claim_link_funding']);
    expect(await kinds(linkId)).toEqual(['claim_link.funded', 'claim_link.funding_fee']);
    expect(await held(linkId)).toEqual({ 'assets:claim_pool': 3_000_000n, 'expense:payout_fees': FEE });
    expect(await openFindings(linkId)).toEqual([]);
    expect(await custodyDrift()).toBe(0n);

    // The funding's block and the three after it are replaced: one entry reversed, through the
    // first log; the transaction mined again books it again, keyed by its first log.
    const raw = (await kit.raw('eth_getRawTransactionByHash', [tx.txHash])) as string;
    await kit.raw('anvil_reorg', [4, []]);
    await indexChainPass(deps, CHAIN_ID);
    expect((await settleTransfers(applyDeps, CHAIN_ID)).unwound).toBe(2);
    expect(await held(linkId)).toEqual({ 'assets:claim_pool': 3_000_000n });
    await kit.raw('eth_sendRawTransaction', [raw]);
    await settle();
    expect(await kinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.funding_fee.reversal',
      'claim_link.funding_fee',
    ]);
    const { rows } = await kit.db.db.execute<{ key: string; block_hash: string; log_index: number }>(sql`
      select e.idempotency_key as key, t.block_hash, t.log_index from ledger_entries e, chain_transfers t
      where e.ref_id = ${linkId} and e.kind = 'claim_link.funding_fee' and t.tx_hash = ${tx.txHash}
        and t.state = 'final' and t.matched_as = 'claim_link_funding_fee' order by e.id desc limit 1`);
    expect(rows[0]?.key).toBe(
      `claim_link:funding_fee:${linkId}:${CHAIN_ID}:${tx.txHash}:${rows[0]?.log_index}:${rows[0]?.block_hash}`,
    );
    expect(await held(linkId)).toEqual({ 'assets:claim_pool': 3_000_000n, 'expense:payout_fees': FEE });
    expect(await custodyDrift()).toBe(0n);
    await expectBalanced();
  });

  it('behavior: one transaction funding two links gives each link the logs of its own pool', async () => {
    const tx = await fundInOneTransaction([
      ['cl_pair_4', 4_000_000n + FEE],
      ['cl_pair_2', 2_000_000n + FEE],
    ]);
    await createdPayout('cl_pair_2', 2_000_000n, tx.txHash);
    await createdPayout('cl_pair_4', 4_000_000n, tx.txHash);
    await settle();
    expect(await matchedAs(tx.txHash)).toEqual(['claim_link_funding_fee', 'claim_link_funding_fee']);
    for (const linkId of ['cl_pair_2', 'cl_pair_4']) {
      expect(await funding(linkId), linkId).toEqual({
        pool_address: await poolAddress(linkId),
        funding_tx_hash: tx.txHash,
        fee: FEE,
      });
      expect(await openFindings(linkId), linkId).toEqual([]);
    }
    expect(await custodyDrift()).toBe(0n);
    await expectBalanced();
  });

  it('error: a payout whose funding transaction pays the merchant wallet gets no pool there: a finding says why', async () => {
    const linkId = 'cl_hash_merchant';
    const move = await kit.chain.transfer('USDT', 'custody:biz_1', kit.merchant, 5_500_000n);
    await createdPayout(linkId, 5_000_000n, move.txHash);
    clock.advance(60_001);
    await settle();
    expect(await matchedAs(move.txHash)).toEqual(['transfer_in_unmatched,transfer_out_unmatched']);
    expect(await openFindings(linkId)).toEqual(['claim_link_pool_refused']);
    expect(await funding(linkId)).toMatchObject({ pool_address: null, fee: 0n });
    expect(await rolesOf(kit.merchant)).toEqual(['merchant']);
    // Rule 5 credited custody for a funding the chain does not show: off until a person decides
    // (last in this file for that reason).
    expect(await custodyDrift()).toBe(5_000_000n);
  });

  it('error: a pool row learnt for the merchant wallet before the fix does not make it a pool', async () => {
    const merchant = kit.merchant.toLowerCase();
    await kit.db.db.execute(sql`
      insert into chain_watched_wallets (chain_id, address, role, store_id, claim_link_id, from_block, caught_up)
      values (${CHAIN_ID}, ${merchant}, 'pool', 'st_a', 'cl_legacy', 0, true)`);
    try {
      expect(await rolesOf(merchant)).toEqual(['merchant']);
      const paid = await paymentIntoMerchant('legacy_pool_row', 3_000_000n);
      await settle();
      expect(await matchedAs(paid.txHash)).toEqual(['payment_proof']);
    } finally {
      await kit.db.ownerDb.execute(sql`delete from chain_watched_wallets where address = ${merchant}`);
    }
  });
});

describe('claim-link refunds: cancellation or expiry', () => {
  it('behavior: the funding block dates funded_at, so an expiry refund after a create answer learnt days late is an expiry', async () => {
    const linkId = 'cl_funded_late';
    // Funded on chain now; the create answer was lost, and the idempotent replay that settles it
    // three days later carries no funding hash and stamps funded_at then.
    const funding = await fund(linkId, 3_000_000n + FEE);
    clock.set(new Date((await chainNow()).getTime() + 3 * DAY_MS));
    await createdPayout(linkId, 3_000_000n, null);
    await settle();
    expect(await matchedAs(funding.txHash)).toEqual(['claim_link_funding_fee']);
    const fundedAt = await kit.db.db.execute<{ funded_at: string }>(
      sql`select funded_at from payouts where claim_link_id = ${linkId}`,
    );
    // Before: funded_at stayed three days after the funding block.
    expect(new Date(fundedAt.rows[0]?.funded_at ?? 0).getTime()).toBeLessThan(
      (await chainNow()).getTime() + 60_000,
    );
    // The service expires it 14 days after the funding and refunds it (chain time moves on).
    await kit.raw('evm_increaseTime', [14 * 86_400 + 60]);
    await kit.chain.transfer('USDT', `pool:${linkId}`, kit.custody, 3_000_000n);
    clock.set(new Date((await chainNow()).getTime() + 60_000));
    await settle();
    expect(await kinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.expired',
      'claim_link.refunded',
    ]);
    expect(await payout(linkId)).toMatchObject({ link_status: 'expired' });
    expect(await openFindings(linkId)).not.toContain('cancelled_outside_stablebooks');
    await expectBalanced();
  });
});

describe('claim-link fundings waiting for their payout', () => {
  it('behavior: a funding that waits for a payout whose create outcome is unknown is a finding after the grace, resolved once the outcome is learnt', async () => {
    const linkId = 'cl_waits_for_outcome';
    const payoutId = `po_${linkId}`;
    // A create whose answer never came: no link yet, outcome unknown, nothing posted.
    await unknownPayout(payoutId, '4', await chainNow());
    const payoutFindings = () => openPayoutFindings(payoutId);
    const funded = await fund(linkId, 4_000_000n + FEE);
    clock.set(new Date());
    await settle();
    expect(await matchedAs(funded.txHash)).toEqual([null]); // waits for the payout's link
    expect(await payoutFindings()).toEqual([]);

    clock.advance(120_000); // past the 60 s grace since it became final (on the indexer's clock)
    await settle();
    // Before: it waited in silence (custody's balance proof failing) until someone ran the create again.
    expect(await payoutFindings()).toEqual(['funding_awaits_create_outcome']);
    const details = await kit.db.db.execute<{ action: string }>(sql`
      select details->>'action' as action from findings where ref_id = ${payoutId} and resolved_at is null`);
    expect(details.rows[0]?.action).toMatch(/reference_id ref-cl_waits_for_outcome/);

    // The same create run again learns the link (an idempotent hit): rule 5, then the funding books.
    await kit.db.db.execute(sql`
      update payouts set claim_link_id = ${linkId}, create_outcome = 'created', link_status = 'link_sent',
             funded_at = ${clock.now().toISOString()}::timestamptz
      where id = ${payoutId}`);
    const rule5 = claimLinkFunded({
      storeId: 'st_a',
      claimLinkId: linkId,
      token: USDT,
      amount: '4',
      occurredAt: clock.now(),
    });
    await postEntry(kit.db.db, rule5.entry!, { accounts });
    await settle();
    expect(await matchedAs(funded.txHash)).toEqual(['claim_link_funding_fee']);
    expect(await payoutFindings()).toEqual([]);
    await expectBalanced();
  });

  it('error: a payout stuck with an unknown create outcome does not capture a custody outflow mined long after its last attempt', async () => {
    const payoutId = 'po_cl_stuck_unknown';
    // Its last create attempt was two hours ago (by the chain's clock); its outcome is still unknown.
    await unknownPayout(payoutId, '6', new Date((await chainNow()).getTime() - 2 * 3_600_000));
    // The owner withdraws 6.5 now, to an address nobody knows.
    const later = await kit.chain.transfer(
      'USDT',
      'custody:biz_1',
      await kit.chain.wallet('exchange:later'),
      6_000_000n + FEE,
    );
    clock.set(new Date());
    await settle();
    clock.advance(120_000);
    await settle();
    // Before: it waited for the stuck payout (funding_awaits_create_outcome on it) until someone
    // ran its create again, then would have been booked as its funding.
    expect(await matchedAs(later.txHash)).toEqual(['transfer_out_unmatched']);
    expect(await openPayoutFindings(payoutId)).toEqual([]);
    await expectBalanced();
  });

  it('behavior: a funding whose best match waits for its create outcome goes, after the grace, to the next candidate that has a link; the waiting payout gets the finding', async () => {
    const waitingId = 'po_cl_best_waits';
    const linkId = 'cl_next_in_line';
    const now = await chainNow();
    // Both fit an outflow of 7.5: the waiting one (7, fee 0.5) better than the one with a link
    // (6.9, a lost answer: link, no funding hash; fee 0.6).
    await unknownPayout(waitingId, '7', now);
    await createdPayout(linkId, 6_900_000n, null, now);
    const funded = await fund(linkId, 7_000_000n + FEE);
    clock.set(new Date());
    await settle();
    expect(await matchedAs(funded.txHash)).toEqual([null]); // the waiting payout's answer may still come
    clock.advance(120_000); // past the grace since it became final
    await settle();
    // Before: it kept waiting behind the payout with no link, and the link's funding was never booked.
    expect(await matchedAs(funded.txHash)).toEqual(['claim_link_funding_fee']);
    expect(await funding(linkId)).toEqual({
      pool_address: await poolAddress(linkId),
      funding_tx_hash: funded.txHash,
      fee: 7_000_000n + FEE - 6_900_000n,
    });
    expect(await openFindings(linkId)).toEqual(['funding_matched_by_amount']);
    const matched = await kit.db.db.execute<{ severity: string; others: { payout_id: string }[] }>(sql`
      select severity, details->'other_candidates' as others from findings
      where kind = 'funding_matched_by_amount' and ref_id = ${linkId} and resolved_at is null`);
    expect(matched.rows[0]).toMatchObject({ severity: 'warning', others: [{ payout_id: waitingId }] });
    expect(await openPayoutFindings(waitingId)).toEqual(['funding_awaits_create_outcome']);
    const what = await kit.db.db.execute<{ what: string }>(sql`
      select details->>'what' as what from findings where ref_id = ${waitingId} and resolved_at is null`);
    expect(what.rows[0]?.what).toContain(`po_${linkId}`);
    await expectBalanced();
  });
});

/** A payout whose create outcome is unknown (no link, nothing posted), last attempted at `at`. */
async function unknownPayout(payoutId: string, amount: string, at: Date): Promise<void> {
  await kit.db.db.execute(sql`
    insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                         attempts, created_at, updated_at)
    values (${payoutId}, 'st_a', ${`ref-${payoutId.replace(/^po_/, '')}`}, ${amount}, 1, ${CHAIN_ID}, ${USDT.address}, 'unknown',
            1, ${at.toISOString()}::timestamptz, ${at.toISOString()}::timestamptz)`);
}

/** The open findings of a payout (ref type payout). */
async function openPayoutFindings(payoutId: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(sql`
    select kind from findings where ref_type = 'payout' and ref_id = ${payoutId} and resolved_at is null`);
  return rows.map((r) => r.kind);
}
