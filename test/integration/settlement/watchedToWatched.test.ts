import { sql } from 'drizzle-orm';
import type { Address } from 'viem';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../../src/clock.ts';
import { trialBalance } from '../../../src/ledger/balances.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { claimLinkFunded } from '../../../src/ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import { proveBalances } from '../../../src/recon/balanceProofs.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { CheckoutStatus } from '../../../src/svc/models/checkoutStatus.ts';
import { CHAIN_ID, createIndexerKit, useStores } from '../chain/indexerKit.ts';

/**
 * A transfer from one watched wallet into another (docs/accounting.md, rule 9: "A transfer between
 * two watched wallets books both sides"), on a real anvil and PostgreSQL: one store's merchant
 * wallet paying another store's checkout, a claim link claimed into the merchant's own wallet, a
 * custody wallet paying its own store's checkout, and a payment sent back to a payer that is a
 * watched wallet. Whatever rule explains one side (rule 2, 6 or the payment return), the other
 * wallet moved too: unless its side is booked as well (rule 9), that wallet's ledger drifts from
 * balanceOf and its balance proof fails.
 *
 * STORES_FILE as merchants write it: every store has a merchant and a custody wallet of its own
 * (its own business). Each scenario has stores of its own, so each balance proof below is about
 * that scenario's transfers only.
 */
const kit = await createIndexerKit('watched_to_watched');
const clock = createManualClock(new Date());
const GRACE = 60_000;
const USDT = kit.registry.token(CHAIN_ID, kit.chain.tokens.USDT.address)!;
const FEE = 500_000n;

const STORE_IDS = [
  'st_pay_a',
  'st_sell_a',
  'st_pay_b',
  'st_sell_b',
  'st_claim',
  'st_claim_wait',
  'st_custody',
  'st_ret_pay_sb',
  'st_ret_sell_sb',
  'st_ret_pay_rj',
  'st_ret_sell_rj',
] as const;
type StoreId = (typeof STORE_IDS)[number];

await useStores(kit, STORE_IDS);
const deps = kit.deps();
const applyDeps = kit.applyDeps(clock, GRACE);

const merchant = (storeId: StoreId) => kit.chain.wallet(`merchant:${storeId}`);
const custody = (storeId: StoreId) => kit.chain.wallet(`custody:${storeId}`);

/** The matcher at the wall clock's now (the indexer stamps final_at with it): within the grace. */
function settleNow() {
  clock.set(new Date());
  return settleTransfers(applyDeps, CHAIN_ID);
}

/** Rule 5's principal, as createPayout posts it once the create call names the link. */
async function postFunded(storeId: StoreId, linkId: string, amount: bigint): Promise<void> {
  const funded = claimLinkFunded({
    storeId,
    claimLinkId: linkId,
    token: USDT,
    amount: formatDecimalAmount(amount, 6),
    occurredAt: clock.now(),
  });
  await postEntry(kit.db.db, funded.entry!, { accounts: kit.accounts });
}

/** The kinds of a claim link's entries, in the order they were posted. */
async function entryKinds(linkId: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(
    sql`select kind from ledger_entries where ref_id = ${linkId} order by id`,
  );
  return rows.map((r) => r.kind);
}

/** The matcher once every grace is over: whatever nothing explains goes to rule 9. */
function settleLate() {
  clock.set(new Date(Date.now() + 2 * GRACE));
  return settleTransfers(applyDeps, CHAIN_ID);
}

/**
 * A direct payment intent as the service reports it (status, payer and recipient), observed by a
 * poll of the store's key, through the one function every source goes through.
 */
async function serviceIntent(o: {
  id: string;
  storeId: StoreId;
  status: number;
  txHash: string;
  txFrom: Address;
  txTo: Address;
  coins: string;
}): Promise<void> {
  const intent = {
    all_svc_checkout_intent_id: o.id,
    currency: null,
    currency_symbol: null,
    amount_cents: null,
    chain_id: CHAIN_ID,
    amount_coins: o.coins,
    coin_symbol: 'USDT',
    coin_contract: USDT.address,
    currency_rate: null,
    status: o.status,
    order_id: null,
    order_description: null,
    user_id: null,
    user_name: null,
    error_message: null,
    tx_hash: o.txHash,
    tx_hash_2: null,
    tx_from: o.txFrom,
    tx_to: o.txTo,
    actual_paid_amount: o.coins,
    service_fee_amount: '0',
    net_income_amount: o.coins,
    payment_method_type: 1,
    accepted_stable_coins: 1,
  } as CheckoutIntent;
  await kit.db.db.transaction((tx) =>
    applyIntentSnapshot(
      tx,
      { chains: kit.registry, accounts: kit.accounts, stores: kit.stores },
      { storeId: o.storeId, intent, source: 'poll', observedAt: clock.now() },
    ),
  );
}

/** Where refs of entries and findings about these transactions (and intents) point. */
function about(refIds: string[], txHashes: string[]) {
  return sql.join(
    [
      ...refIds.map((id) => sql`ref_id = ${id}`),
      ...txHashes.map((h) => sql`ref_id like ${`${CHAIN_ID}:${h.toLowerCase()}:%`}`),
    ],
    sql` or `,
  );
}

/** What the entries about these transfers and intents net to, per `store account-kind` (non-zero only). */
async function netBooked(txHashes: string[], refIds: string[] = []): Promise<Record<string, bigint>> {
  const { rows } = await kit.db.db.execute<{ k: string; net: string }>(sql`
    select e.store_id || ' ' || split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) as k,
           sum(p.amount)::text as net
    from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
    where ${about(refIds, txHashes)}
    group by 1 having sum(p.amount) <> 0 order by 1`);
  return Object.fromEntries(rows.map((r) => [r.k, BigInt(r.net)]));
}

/** The live entries (neither reversed nor reversals) about these transfers and intents: `kind store`. */
async function liveEntries(txHashes: string[], refIds: string[] = []): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ k: string }>(sql`
    select e.kind || ' ' || e.store_id as k from ledger_entries e
    where (${about(refIds, txHashes)}) and e.reverses_entry_id is null
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)`);
  return rows.map((r) => r.k).sort();
}

/** The lines of the entries of one kind about a transfer: `account-kind:store amount`. */
async function linesOf(kind: string, txHash: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ line: string }>(sql`
    select split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) || ':' || split_part(a.code, ':', 3)
           || ' ' || p.amount::text as line
    from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
    where e.kind = ${kind} and e.ref_id like ${`${CHAIN_ID}:${txHash.toLowerCase()}:%`}
    order by e.id, p.amount desc`);
  return rows.map((r) => r.line);
}

/** The open findings about a transfer: `kind store`. */
async function openTransferFindings(txHash: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ k: string }>(sql`
    select kind || ' ' || store_id as k from findings
    where resolved_at is null and ref_type = 'chain_transfer' and ref_id like ${`${CHAIN_ID}:${txHash.toLowerCase()}:%`}`);
  return rows.map((r) => r.k).sort();
}

/**
 * The USDT balance proofs of these wallets, by `role store`: ok and ledger minus balanceOf. Every
 * transfer is final and booked when it is called, so each proof is made (ok never null).
 */
async function proofs(...wallets: ['merchant' | 'custody', StoreId][]) {
  const all = await proveBalances({
    db: kit.db.db,
    config: { stores: kit.stores, chains: kit.registry },
    rpcs: new Map([[CHAIN_ID, deps.rpc]]),
    clock,
  });
  const out: Record<string, { ok: boolean | null; drift: bigint | null }> = {};
  for (const [role, storeId] of wallets) {
    const address = (role === 'merchant' ? await merchant(storeId) : await custody(storeId)).toLowerCase();
    const p = all.find((x) => x.role === role && x.symbol === 'USDT' && x.wallet === address);
    out[`${role} ${storeId}`] = {
      ok: p?.ok ?? null,
      drift: p?.chainBalance == null ? null : p.ledgerBalance - p.chainBalance,
    };
  }
  return out;
}

const proven = { ok: true, drift: 0n };

async function expectBalanced(): Promise<void> {
  for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
}

// The wallets that pay hold money first: the owners' top-ups, booked to suspense (rule 9).
for (const storeId of ['st_pay_a', 'st_pay_b', 'st_ret_pay_sb', 'st_ret_pay_rj'] as const) {
  await kit.chain.mint('USDT', await merchant(storeId), 100_000_000n);
}
await kit.chain.mint('USDT', await custody('st_claim'), 100_000_000n);
await kit.chain.mint('USDT', await custody('st_claim_wait'), 100_000_000n);
await kit.chain.mint('USDT', await custody('st_custody'), 100_000_000n);
await kit.indexUntilFinal(deps);
await settleLate();

describe("one store's merchant wallet pays another store's checkout", () => {
  const X = 25_000_000n;
  it.each([
    ['the confirmation is applied before the transfer is final (rule 2 from the intent side first)', 'a'],
    ['the confirmation arrives after the grace, when rule 9 booked both sides', 'b'],
  ] as const)(
    "behavior: the payee's intent is proven (rule 2) and the payer's outflow is an owner transfer (rule 9 out); both wallets prove, when %s",
    async (_name, order) => {
      const payer = `st_pay_${order}` as const;
      const payee = `st_sell_${order}` as const;
      const intentId = `ci_w2w_${order}`;
      const paid = await kit.chain.transfer('USDT', `merchant:${payer}`, await merchant(payee), X);
      const confirm = async () =>
        serviceIntent({
          id: intentId,
          storeId: payee,
          status: CheckoutStatus.CONFIRMED,
          txHash: paid.txHash,
          txFrom: await merchant(payer),
          txTo: await merchant(payee),
          coins: '25',
        });
      if (order === 'a') {
        await confirm();
        await kit.indexUntilFinal(deps);
        await settleNow();
      } else {
        await kit.indexUntilFinal(deps);
        await settleLate();
        // Nobody explains it yet: the payee's side waits in suspense, the payer's is an owner transfer.
        expect(await liveEntries([paid.txHash])).toEqual([
          `chain.transfer_in_unmatched ${payee}`,
          `chain.transfer_out_unmatched ${payer}`,
        ]);
        await confirm();
        await settleNow();
      }

      // Same books whichever side learnt last: the sale proven into the payee's wallet, the
      // payer's wallet credited with what left it (an owner transfer until a person says more).
      expect(await liveEntries([paid.txHash], [intentId])).toEqual([
        `chain.payment_proven ${payee}`,
        `chain.transfer_out_unmatched ${payer}`,
        `checkout.confirmed ${payee}`,
      ]);
      expect(await linesOf('chain.transfer_out_unmatched', paid.txHash)).toEqual([
        `equity:owner_transfers:${payer} ${X}`,
        `assets:wallet:${payer} ${-X}`,
      ]);
      expect(await netBooked([paid.txHash], [intentId])).toEqual({
        [`${payee} assets:wallet`]: X,
        [`${payee} income:sales`]: -X,
        [`${payer} assets:wallet`]: -X,
        [`${payer} equity:owner_transfers`]: X,
      });
      expect(await openTransferFindings(paid.txHash)).toEqual([`unmatched_transfer_out ${payer}`]);
      expect(await proofs(['merchant', payer], ['merchant', payee])).toEqual({
        [`merchant ${payer}`]: proven,
        [`merchant ${payee}`]: proven,
      });
      // Nothing more on later passes.
      expect(await settleLate()).toEqual({ applied: 0, deferred: 0, unwound: 0 });
      await expectBalanced();
    },
  );
});

describe("a claim link claimed into its own store's merchant wallet", () => {
  it("behavior: the claim is booked (rule 6) and the merchant wallet's inflow too (rule 9 in, after the grace); the wallet proves", async () => {
    const storeId = 'st_claim';
    const linkId = 'cl_into_merchant';
    const amount = 4_000_000n;
    const pool = await kit.chain.wallet(`pool:${linkId}`);
    const funding = await kit.chain.transfer('USDT', `custody:${storeId}`, pool, amount + FEE);
    // As createPayout leaves it: the row created and rule 5 posted with the service's answer.
    await kit.db.db.execute(sql`
      insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                           claim_link_id, link_status, funded_at, funding_tx_hash)
      values (${`po_${linkId}`}, ${storeId}, ${`ref-${linkId}`}, ${formatDecimalAmount(amount, 6)}, 1, ${CHAIN_ID},
              ${USDT.address}, 'created', ${linkId}, 'link_sent', ${clock.now().toISOString()}::timestamptz,
              ${funding.txHash})`);
    await postFunded(storeId, linkId, amount);
    await kit.indexUntilFinal(deps);
    await settleNow(); // the funding: the pool is learnt
    await kit.chain.transfer('USDT', `pool:${linkId}`, await kit.chain.wallet('fees:31337'), FEE);
    // The recipient claims into the merchant's own wallet.
    const claim = await kit.chain.transfer('USDT', `pool:${linkId}`, await merchant(storeId), amount);
    await kit.indexUntilFinal(deps);
    await settleLate();

    expect(await entryKinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.claimed',
    ]);
    // The merchant wallet received money no intent explains: suspense, for a person.
    expect(await linesOf('chain.transfer_in_unmatched', claim.txHash)).toEqual([
      `assets:wallet:${storeId} ${amount}`,
      `assets:suspense:${storeId} ${-amount}`,
    ]);
    expect(await openTransferFindings(claim.txHash)).toEqual([`unmatched_transfer_in ${storeId}`]);
    expect(await proofs(['merchant', storeId], ['custody', storeId])).toEqual({
      [`merchant ${storeId}`]: proven,
      [`custody ${storeId}`]: proven,
    });
    expect(await settleLate()).toEqual({ applied: 0, deferred: 0, unwound: 0 });
    await expectBalanced();
  });
});

describe("a claim into the merchant's own wallet while the link's funding waits for its create outcome", () => {
  it("behavior: the claim waits with the funding (not rule 9 alone, with the pool's side lost); once the outcome is known the funding is matched, the claim booked (rule 6) and the inflow too; both wallets prove", async () => {
    const storeId = 'st_claim_wait';
    const linkId = 'cl_claim_waits_funding';
    const amount = 5_000_000n;
    const pool = await kit.chain.wallet(`pool:${linkId}`);
    // As createPayout leaves a payout whose create answer was lost: no link, no funding hash.
    await kit.db.db.execute(sql`
      insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                           created_at, updated_at)
      values (${`po_${linkId}`}, ${storeId}, ${`ref-${linkId}`}, ${formatDecimalAmount(amount, 6)}, 1, ${CHAIN_ID},
              ${USDT.address}, 'unknown', now() - interval '5 seconds', now())`);
    const funding = await kit.chain.transfer('USDT', `custody:${storeId}`, pool, amount + FEE);
    const claim = await kit.chain.transfer('USDT', `pool:${linkId}`, await merchant(storeId), amount);
    await kit.indexUntilFinal(deps);
    await settleLate(); // every grace over, the create outcome still unknown

    // Nothing is booked for either transfer: the funding waits for its outcome, the claim for it.
    expect(await liveEntries([funding.txHash, claim.txHash], [linkId])).toEqual([]);

    // The create call is run again and answers: the link (createPayout posts rule 5's principal).
    await kit.db.db.execute(sql`
      update payouts set create_outcome = 'created', claim_link_id = ${linkId}, link_status = 'link_sent'
      where id = ${`po_${linkId}`}`);
    await postFunded(storeId, linkId, amount);
    await settleLate();

    expect(await entryKinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.claimed',
    ]);
    expect(await linesOf('chain.transfer_in_unmatched', claim.txHash)).toEqual([
      `assets:wallet:${storeId} ${amount}`,
      `assets:suspense:${storeId} ${-amount}`,
    ]);
    expect(await proofs(['merchant', storeId], ['custody', storeId])).toEqual({
      [`merchant ${storeId}`]: proven,
      [`custody ${storeId}`]: proven,
    });
    await expectBalanced();
  });
});

describe("a custody wallet pays its own store's checkout", () => {
  it('behavior: the intent is proven (rule 2) and the custody outflow is an owner transfer (rule 9 out); custody proves', async () => {
    const storeId = 'st_custody';
    const X = 30_000_000n;
    const intentId = 'ci_paid_from_custody';
    const paid = await kit.chain.transfer('USDT', `custody:${storeId}`, await merchant(storeId), X);
    await serviceIntent({
      id: intentId,
      storeId,
      status: CheckoutStatus.CONFIRMED,
      txHash: paid.txHash,
      txFrom: await custody(storeId),
      txTo: await merchant(storeId),
      coins: '30',
    });
    await kit.indexUntilFinal(deps);
    await settleNow();

    expect(await liveEntries([paid.txHash], [intentId])).toEqual([
      `chain.payment_proven ${storeId}`,
      `chain.transfer_out_unmatched ${storeId}`,
      `checkout.confirmed ${storeId}`,
    ]);
    expect(await linesOf('chain.transfer_out_unmatched', paid.txHash)).toEqual([
      `equity:owner_transfers:${storeId} ${X}`,
      `assets:custody:${storeId} ${-X}`,
    ]);
    expect(await openTransferFindings(paid.txHash)).toEqual([`unmatched_transfer_out ${storeId}`]);
    expect(await proofs(['custody', storeId], ['merchant', storeId])).toEqual({
      [`custody ${storeId}`]: proven,
      [`merchant ${storeId}`]: proven,
    });
    expect(await settleLate()).toEqual({ applied: 0, deferred: 0, unwound: 0 });
    await expectBalanced();
  });
});

describe('a payment sent back to a payer that is a watched wallet', () => {
  it.each([
    ['SEND_BACK', CheckoutStatus.SEND_BACK, 'sb', 15_000_000n],
    ['REJECTED', CheckoutStatus.REJECTED, 'rj', 16_000_000n],
  ] as const)(
    "behavior: intent %s: the return clears the payee's suspense, the payer's outflow and inflow are rule 9; all wallets prove",
    async (_name, status, suffix, X) => {
      const payer = `st_ret_pay_${suffix}` as const;
      const payee = `st_ret_sell_${suffix}` as const;
      const intentId = `ci_sent_back_${suffix}`;
      const coins = formatDecimalAmount(X, 6);
      const paid = await kit.chain.transfer('USDT', `merchant:${payer}`, await merchant(payee), X);
      await serviceIntent({
        id: intentId,
        storeId: payee,
        status,
        txHash: paid.txHash,
        txFrom: await merchant(payer),
        txTo: await merchant(payee),
        coins,
      });
      // The service sends the payment back from the payee's wallet to the wallet it came from.
      const returned = await kit.chain.transfer('USDT', `merchant:${payee}`, await merchant(payer), X);
      await kit.indexUntilFinal(deps);
      await settleLate();

      expect(await liveEntries([paid.txHash, returned.txHash], [intentId])).toEqual([
        `chain.payment_returned ${payee}`,
        `chain.transfer_in_unmatched ${payer}`,
        `chain.transfer_in_unmatched ${payee}`,
        `chain.transfer_out_unmatched ${payer}`,
      ]);
      expect(await linesOf('chain.transfer_in_unmatched', returned.txHash)).toEqual([
        `assets:wallet:${payer} ${X}`,
        `assets:suspense:${payer} ${-X}`,
      ]);
      // The payee's books are as before; the payer's: money out and back in, each for a person.
      expect(await netBooked([paid.txHash, returned.txHash], [intentId])).toEqual({
        [`${payer} assets:suspense`]: -X,
        [`${payer} equity:owner_transfers`]: X,
      });
      expect(await openTransferFindings(paid.txHash)).toEqual([`unmatched_transfer_out ${payer}`]);
      expect(await openTransferFindings(returned.txHash)).toEqual([`unmatched_transfer_in ${payer}`]);
      expect(await proofs(['merchant', payer], ['merchant', payee])).toEqual({
        [`merchant ${payer}`]: proven,
        [`merchant ${payee}`]: proven,
      });
      expect(await settleLate()).toEqual({ applied: 0, deferred: 0, unwound: 0 });
      await expectBalanced();
    },
  );
});
