import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { readCursor, writeCursor, writeCursorHead } from '../../../src/chain/chainCursor.ts';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { receiptTransfers, storeReceiptTransfers } from '../../../src/chain/receiptTransfers.ts';
import { createManualClock } from '../../../src/clock.ts';
import type { StoreConfig } from '../../../src/config/stores.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { claimLinkFunded } from '../../../src/ledger/rules/claimLinkRules.ts';
import { type BalanceProof, type ProofDeps, proveBalances } from '../../../src/recon/balanceProofs.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * Balance proofs on real PostgreSQL and a real chain (anvil, final at depth 2): the block a proof
 * is made at is one the ledger has caught up with (never above the indexer's cursor, never moved
 * back by a lagging node), rows still on their way make it wait instead of fail, and a payout the
 * service funded before its funding transfer is final is in flight, not a difference.
 */
const kit = await createIndexerKit('recon_proofs');
const { chain } = kit;
const clock = createManualClock(new Date());
const rpc = kit.deps().rpc;
const USDT = kit.registry.chain(CHAIN_ID)!.tokens.find((t) => t.symbol === 'USDT')!;
let seq = 0;

/** The in-flight window of these proofs (RECON_IN_TRANSIT_MINUTES), on the test's clock. */
const WINDOW_MS = 30 * 60_000;

function proofDeps(stores: StoreConfig[] = kit.stores): ProofDeps {
  return {
    db: kit.db.db,
    config: { stores, chains: kit.registry, recon: { inTransitWindowMs: WINDOW_MS } },
    rpcs: new Map([[CHAIN_ID, rpc]]),
    clock,
  };
}

/** Lets the matcher book what is final, past its grace (rule 9 for nobody's transfers). */
async function apply(stores: StoreConfig[] = kit.stores): Promise<void> {
  clock.advance(3_600_000);
  await settleTransfers({ ...kit.applyDeps(clock, 0), config: { stores, chains: kit.registry } }, CHAIN_ID);
}

/** Indexes with these stores' wallets watched, then lets the matcher book. */
async function indexAndApply(stores: StoreConfig[] = kit.stores): Promise<void> {
  await indexChainPass({ ...kit.deps(), config: { stores, chains: kit.registry } }, CHAIN_ID);
  await apply(stores);
}

/** Mines past finality, indexes and books everything. */
async function settle(stores: StoreConfig[] = kit.stores): Promise<void> {
  await kit.raw('anvil_mine', ['0x3']);
  await indexAndApply(stores);
}

function only(proofs: BalanceProof[], role: 'merchant' | 'custody', wallet: string): BalanceProof {
  const found = proofs.filter(
    (p) => p.role === role && p.symbol === 'USDT' && p.wallet === wallet.toLowerCase(),
  );
  expect(found).toHaveLength(1);
  return found[0]!;
}

async function pay(to: `0x${string}`, amount: bigint): Promise<{ txHash: string; blockNumber: bigint }> {
  const label = `payer-${seq++}`;
  await chain.mint('USDT', await chain.wallet(label), amount);
  return chain.transfer('USDT', label, to, amount);
}

async function finalizedBlock(): Promise<bigint | null> {
  return (await readCursor(kit.db.db, CHAIN_ID))?.finalizedBlock ?? null;
}

await chain.mint('USDT', kit.custody, 100_000_000n);
await settle();

describe('balance proofs', () => {
  it('behavior: a payout booked out of custody (rule 5) before its funding is final is in flight, not a difference', async () => {
    expect(only(await proveBalances(proofDeps()), 'custody', kit.custody).ok).toBe(true);
    const pool = await chain.wallet(`pool-${seq++}`);
    const linkId = `cl_inflight_${seq++}`;
    // The service funds the link (principal 5, fee 0.5) and answers: rule 5 is posted with the answer.
    const funding = await chain.transfer('USDT', 'custody:biz_1', pool, 5_500_000n);
    await kit.db.db.transaction(async (tx) => {
      await tx.execute(sql`
        insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                             claim_link_id, link_status, funding_tx_hash, funded_at)
        values (${`po_${linkId}`}, 'st_a', ${`ref_${linkId}`}, '5', 1, ${CHAIN_ID}, ${USDT.address}, 'created',
                ${linkId}, 'pending_deposit', ${funding.txHash}, now())`);
      const outcome = claimLinkFunded({
        storeId: 'st_a',
        claimLinkId: linkId,
        token: USDT,
        amount: '5',
        occurredAt: clock.now(),
        fundingTxHash: funding.txHash,
      });
      await postEntry(tx, outcome.entry!, { accounts: kit.accounts });
    });
    // The indexer has stored the funding (pending): the proof block is below it.
    await indexAndApply();
    const during = only(await proveBalances(proofDeps()), 'custody', kit.custody);
    expect(during.blockNumber).toBeLessThan(funding.blockNumber);
    expect(during).toMatchObject({ ok: true, error: null, inFlight: 5_000_000n });
    expect(during.ledgerBalance).toBe(during.chainBalance);
    expect(during.note).toContain(`po_${linkId}`);
    const stored = await kit.db.db.execute<{ details: { in_flight?: string } }>(sql`
      select details from balance_proofs where role = 'custody' and token = ${USDT.address} order by id desc limit 1`);
    expect(stored.rows[0]?.details.in_flight).toBe('5000000');

    // Final and booked (rule 5 fee): proven without anything added back.
    await settle();
    const after = only(await proveBalances(proofDeps()), 'custody', kit.custody);
    expect(after.blockNumber).toBeGreaterThanOrEqual(funding.blockNumber);
    expect(after).toMatchObject({ ok: true, inFlight: 0n, note: null });
  });

  it('behavior: during a backfill the proof is made at the cursor, not at a finalized block above it', async () => {
    const paid = await pay(kit.merchant, 25_000_000n);
    await kit.confirmedIntent(paid.txHash);
    await kit.raw('anvil_mine', ['0xa']);
    // One range of one block: the cursor stops below the payment, finality is far above it.
    await indexChainPass(kit.deps(), CHAIN_ID, { maxRanges: 1, initialRange: 1n });
    const cursor = (await readCursor(kit.db.db, CHAIN_ID))!;
    expect(cursor.blockNumber).toBeLessThan(paid.blockNumber);
    expect(cursor.finalizedBlock!).toBeGreaterThan(paid.blockNumber);
    const during = only(await proveBalances(proofDeps()), 'merchant', kit.merchant);
    expect(during).toMatchObject({ ok: true, blockNumber: cursor.blockNumber });

    await settle();
    const after = only(await proveBalances(proofDeps()), 'merchant', kit.merchant);
    expect(after.ok).toBe(true);
    expect(after.blockNumber).toBeGreaterThanOrEqual(paid.blockNumber);
  });

  it('behavior: a transfer stored but not final yet at or below the proof block makes the proof wait, not fail', async () => {
    const paid = await pay(kit.merchant, 3_000_000n);
    await indexChainPass(kit.deps(), CHAIN_ID);
    // The finalized block recorded before the finality step has marked the row final.
    await writeCursorHead(kit.db.db, CHAIN_ID, await kit.head(), paid.blockNumber);
    const waiting = only(await proveBalances(proofDeps()), 'merchant', kit.merchant);
    expect(waiting.ok).toBeNull();
    expect(waiting.error).toMatch(
      /waiting: 1 transfer\(s\) up to block \d+ not yet final or not matched yet/,
    );

    await settle();
    expect(only(await proveBalances(proofDeps()), 'merchant', kit.merchant).ok).toBe(true);
  });

  it('behavior: a payment booked from its receipt ahead of the cursor makes the proof wait until the cursor passes it', async () => {
    await settle();
    const paid = await pay(kit.merchant, 6_000_000n);
    await kit.confirmedIntent(paid.txHash, { coins: '6' });
    // Verified by receipt (chain.verify), then final while the indexer reads no logs.
    const receipt = await receiptTransfers(rpc, kit.registry, CHAIN_ID, paid.txHash as `0x${string}`);
    if (receipt.status !== 'success') throw new Error('expected a receipt');
    await storeReceiptTransfers(kit.db.db, receipt.transfers);
    await kit.raw('anvil_mine', ['0x3']);
    await indexChainPass(kit.deps(), CHAIN_ID, { maxRanges: 0 });
    await apply();
    const cursor = (await readCursor(kit.db.db, CHAIN_ID))!;
    expect(cursor.blockNumber).toBeLessThan(paid.blockNumber);
    const waiting = only(await proveBalances(proofDeps()), 'merchant', kit.merchant);
    expect(waiting.ok).toBeNull();
    expect(waiting.error).toMatch(/1 booked transfer\(s\) above block/);

    await settle();
    expect(only(await proveBalances(proofDeps()), 'merchant', kit.merchant).ok).toBe(true);
  });

  it('behavior: the finalized block never moves back (a lagging fallback node, a range commit)', async () => {
    await settle();
    const before = await finalizedBlock();
    expect(before).not.toBeNull();
    const cursor = (await readCursor(kit.db.db, CHAIN_ID))!;
    await writeCursorHead(kit.db.db, CHAIN_ID, cursor.headBlock!, 0n);
    await writeCursor(kit.db.db, CHAIN_ID, { ...cursor, headBlock: cursor.headBlock!, finalizedBlock: 1n });
    // A range commit records no finality at all.
    await writeCursor(kit.db.db, CHAIN_ID, { ...cursor, headBlock: cursor.headBlock!, finalizedBlock: null });
    expect(await finalizedBlock()).toBe(before);
    const proofs = await proveBalances(proofDeps());
    expect(proofs.every((p) => p.ok === true && p.blockNumber === before)).toBe(true);
  });

  it('behavior: a booked transfer whose block a reorg replaced makes the proof wait until it is unwound', async () => {
    const paid = await pay(kit.merchant, 2_000_000n); // nobody's payment: suspense (rule 9)
    await kit.raw('anvil_mine', ['0x2']);
    await indexAndApply();
    expect(only(await proveBalances(proofDeps()), 'merchant', kit.merchant).ok).toBe(true);

    await kit.raw('anvil_reorg', [3, []]); // replaces the payment's block and the two above it
    await indexChainPass(kit.deps(), CHAIN_ID, { maxRanges: 0 });
    const cursor = (await readCursor(kit.db.db, CHAIN_ID))!;
    expect(cursor.blockNumber).toBeLessThan(paid.blockNumber);
    const waiting = only(await proveBalances(proofDeps()), 'merchant', kit.merchant);
    expect(waiting.ok).toBeNull();
    expect(waiting.error).toMatch(/1 booked transfer\(s\) of replaced blocks not unwound yet/);

    // Rule 3 reverses the booking: the books and the chain agree again.
    await apply();
    expect(only(await proveBalances(proofDeps()), 'merchant', kit.merchant).ok).toBe(true);
    await settle();
    expect(only(await proveBalances(proofDeps()), 'merchant', kit.merchant).ok).toBe(true);
  });

  it('behavior: an address configured as merchant and custody is proven against the accounts of both roles', async () => {
    const both = await chain.wallet(`both-${seq++}`);
    const stores: StoreConfig[] = [
      ...kit.stores,
      {
        storeId: 'st_c',
        businessId: 'biz_2',
        apiKey: 'key_c',
        apiSecret: 'secret-c-0123456789',
        signedResponse: false,
        functionalCurrency: 'USD',
        par: new Map(),
        wallets: new Map([[CHAIN_ID, { merchant: both, custody: both }]]),
      },
    ];
    await chain.mint('USDT', both, 4_000_000n);
    await settle(stores);
    const proofs = await proveBalances(proofDeps(stores));
    const merchant = only(proofs, 'merchant', both);
    const custody = only(proofs, 'custody', both);
    expect(merchant).toMatchObject({ ok: true, ledgerBalance: 4_000_000n, chainBalance: 4_000_000n });
    expect(custody).toMatchObject({ ok: true, ledgerBalance: 4_000_000n, chainBalance: 4_000_000n });
  });

  it('behavior: a pass for one store proves only its wallets, and a wallet it shares whole', async () => {
    await settle();
    const stB = kit.stores[1]!;
    const merchantB = stB.wallets.get(CHAIN_ID)!.merchant.toLowerCase();
    const before = await kit.db.db.execute<{ id: string }>(
      sql`select max(id)::text as id from balance_proofs`,
    );
    const proofs = await proveBalances(proofDeps(), { storeId: 'st_b' });
    const proven = [...new Set(proofs.map((p) => `${p.role} ${p.wallet}`))].sort();
    expect(proven).toEqual([`custody ${kit.custody.toLowerCase()}`, `merchant ${merchantB}`]);
    expect(proofs.every((p) => p.ok === true)).toBe(true);
    // The custody wallet of the business is st_a's too: its proof counts both stores' accounts.
    expect(only(proofs, 'custody', kit.custody).storeIds).toEqual(['st_a', 'st_b']);
    // Only these are proven and stored (st_a's merchant wallet keeps its latest proof); a retired
    // row is only for what left the configuration (st_c's wallet of the test before).
    const stored = await kit.db.db.execute<{ role: string; wallet: string }>(sql`
      select distinct role, wallet from balance_proofs
      where id > ${before.rows[0]!.id}::bigint and not coalesce((details->>'retired')::boolean, false)
      order by role, wallet`);
    expect(stored.rows.map((r) => `${r.role} ${r.wallet}`)).toEqual(proven);
  });

  it('error: a funding booked as rule 9 (transfer_out_unmatched) and credited again by rule 5 from the API fails the custody proof, saying why', async () => {
    const { stores, custody } = await ownCustody('dbl');
    await chain.mint('USDT', custody, 20_000_000n);
    await settle(stores);
    // The service funds a link from custody, but no payout explains the outflow when it is final
    // (its create was believed failed): the settlement books it as an owner withdrawal (rule 9).
    const pool = await chain.wallet(`pool-${seq++}`);
    const funding = await chain.transfer('USDT', 'custody:dbl', pool, 5_500_000n);
    await settle(stores);
    const booked = await kit.db.db.execute<{ matched_as: string }>(sql`
      select matched_as from chain_transfers where tx_hash = ${funding.txHash}`);
    expect(booked.rows.map((r) => r.matched_as)).toEqual(['transfer_out_unmatched']);
    expect(only(await proveBalances(proofDeps(stores)), 'custody', custody).ok).toBe(true);

    // Re-running the create learns the link: rule 5 credits custody again for the same outflow.
    const payoutId = await payoutBookedByApi('st_dbl', 'cl_double_credit', '5', funding.txHash);
    const proof = only(await proveBalances(proofDeps(stores)), 'custody', custody);
    // Before: the payout was added back as "in flight", for ever, and the proof passed.
    expect(proof).toMatchObject({ ok: false, error: null, inFlight: 0n });
    expect(proof.chainBalance! - proof.ledgerBalance).toBe(5_000_000n);
    expect(proof.notAddedBack).toEqual([
      { payoutId, amount: 5_000_000n, reason: expect.stringMatching(/booked as transfer_out_unmatched/) },
    ]);
    expect(proof.note).toContain(payoutId);
    expect(proof.note).toMatch(/credited twice/);
    const stored = await kit.db.db.execute<{
      ok: boolean;
      details: { not_added_back?: { payout_id: string }[] };
    }>(sql`
      select ok, details from balance_proofs
      where role = 'custody' and wallet = ${custody.toLowerCase()} and token = ${USDT.address.toLowerCase()}
      order by id desc limit 1`);
    expect(stored.rows[0]).toMatchObject({
      ok: false,
      details: { not_added_back: [{ payout_id: payoutId }] },
    });
  });

  it('behavior: a funding not on chain yet is in flight for the window after rule 5; past it, it is not added back and the proof says why', async () => {
    const { stores, custody } = await ownCustody('late');
    await chain.mint('USDT', custody, 20_000_000n);
    await settle(stores);
    // The create answer was lost (no funding hash); rule 5 is booked by the replay, now.
    const payoutId = await payoutBookedByApi('st_late', 'cl_not_yet', '4', null);
    const during = only(await proveBalances(proofDeps(stores)), 'custody', custody);
    expect(during).toMatchObject({ ok: true, inFlight: 4_000_000n });
    expect(during.note).toContain(payoutId);

    // Nothing on chain within the window: rule 5 credited custody for money that did not move.
    clock.advance(WINDOW_MS + 60_000);
    const late = only(await proveBalances(proofDeps(stores)), 'custody', custody);
    expect(late).toMatchObject({ ok: false, inFlight: 0n });
    expect(late.chainBalance! - late.ledgerBalance).toBe(4_000_000n);
    expect(late.notAddedBack.map((n) => n.payoutId)).toEqual([payoutId]);
    expect(late.note).toMatch(
      /no funding hash known\) is not on chain at or below block \d+ after 30 minutes/,
    );
  });
});

/** A store of its own (business `biz_<label>`) whose custody wallet is `custody:<label>`, beside the kit's. */
async function ownCustody(label: string): Promise<{ stores: StoreConfig[]; custody: `0x${string}` }> {
  const custody = await chain.wallet(`custody:${label}`);
  const stores: StoreConfig[] = [
    ...kit.stores,
    {
      storeId: `st_${label}`,
      businessId: `biz_${label}`,
      apiKey: `key_${label}`,
      apiSecret: `secret-${label}-0123456789`,
      signedResponse: false,
      functionalCurrency: 'USD',
      par: new Map(),
      wallets: new Map([[CHAIN_ID, { merchant: await chain.wallet(`merchant:${label}`), custody }]]),
    },
  ];
  return { stores, custody };
}

/** A payout created through the API (`payouts create`): its row and rule 5, funded at the clock's now. */
async function payoutBookedByApi(
  storeId: string,
  linkId: string,
  amount: string,
  fundingTxHash: string | null,
): Promise<string> {
  const payoutId = `po_${linkId}`;
  await kit.db.db.transaction(async (tx) => {
    await tx.execute(sql`
      insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                           claim_link_id, link_status, funding_tx_hash, funded_at)
      values (${payoutId}, ${storeId}, ${`ref_${linkId}`}, ${amount}, 1, ${CHAIN_ID}, ${USDT.address}, 'created',
              ${linkId}, 'link_sent', ${fundingTxHash}, ${clock.now().toISOString()}::timestamptz)`);
    const outcome = claimLinkFunded({
      storeId,
      claimLinkId: linkId,
      token: USDT,
      amount,
      occurredAt: clock.now(),
      fundingTxHash,
    });
    await postEntry(tx, outcome.entry!, { accounts: kit.accounts });
  });
  return payoutId;
}
