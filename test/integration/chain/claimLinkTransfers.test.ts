import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { applyChainTransfers } from '../../../src/chain/applyChainTransfers.ts';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { createManualClock } from '../../../src/clock.ts';
import { trialBalance } from '../../../src/ledger/balances.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { claimLinkFunded } from '../../../src/ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { expireClaimLinks } from '../../../src/payouts/expireClaimLinks.ts';
import { refundsOverdue } from '../../../src/payouts/refundsOverdue.ts';
import { CHAIN_ID, createIndexerKit } from './indexerKit.ts';

/**
 * What leaves a claim link's pool (DESIGN.md section 6, rules 6 to 8) when the simple story does
 * not hold: a claim that becomes final after our expiry job ran, a reorg of such a claim, the
 * service's fee sweep when the fee equals the link amount, a claim of another value, and a refund
 * for a link whose books hold no receivable.
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

await kit.chain.mint('USDT', kit.custody, 100_000_000n);

/** Mines past the depth and indexes until nothing stored is pending. */
async function indexUntilFinal(): Promise<void> {
  await kit.raw('anvil_mine', ['0x3']);
  for (let i = 0; i < 5; i++) {
    await indexChainPass(deps, CHAIN_ID);
    if ((await kit.rows()).every((r) => r.state !== 'pending')) return;
  }
  throw new Error('transfers not final');
}

async function settle(): Promise<void> {
  await indexUntilFinal();
  await applyChainTransfers(applyDeps, CHAIN_ID);
}

/**
 * A payout of `amount` (base units) as createPayout leaves it (row created, rule 5 posted, funded
 * at the clock's now), funded on chain with amount + FEE and the fee swept to the service, both
 * final and matched: the pool is learnt. Returns the pool's wallet label.
 */
async function fundedLink(linkId: string, amount: bigint, options: { sweep?: boolean } = {}) {
  const decimal = formatDecimalAmount(amount, USDT.decimals);
  const pool = await kit.chain.wallet(`pool:${linkId}`);
  const funding = await kit.chain.transfer('USDT', 'custody:biz_1', pool, amount + FEE);
  await kit.db.db.execute(sql`
    insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                         claim_link_id, link_status, funded_at, funding_tx_hash)
    values (${`po_${linkId}`}, 'st_a', ${`ref-${linkId}`}, ${decimal}, 1, ${CHAIN_ID}, ${USDT.address}, 'created',
            ${linkId}, 'link_sent', ${clock.now().toISOString()}::timestamptz, ${funding.txHash})`);
  const funded = claimLinkFunded({
    storeId: 'st_a',
    claimLinkId: linkId,
    token: USDT,
    amount: decimal,
    occurredAt: clock.now(),
  });
  await postEntry(kit.db.db, funded.entry!, { accounts });
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
    expect(await applyChainTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 0, unwound: 0 });
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
    expect((await applyChainTransfers(applyDeps, CHAIN_ID)).unwound).toBe(1);
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
    await indexUntilFinal(); // final, not matched yet
    expect(await expireClaimLinks(jobDeps, clock.now())).toBe(0);

    await applyChainTransfers(applyDeps, CHAIN_ID);
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
