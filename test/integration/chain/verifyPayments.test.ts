import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { createManualClock } from '../../../src/clock.ts';
import { startAnvil } from '../../../src/devservices/anvil.ts';
import { ackFinding } from '../../../src/findings/ackFinding.ts';
import { attachCollectors } from '../../../src/metrics/collectors.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { verifyPayments } from '../../../src/payments/verifyPayments.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { CHAIN_ID, createIndexerKit, metricValue } from './indexerKit.ts';

/**
 * Single-transaction verification (docs/accounting.md, "Payments, payouts and the chain"): a confirmed intent whose paying hash the
 * indexer has not reached within the grace is checked by its receipt. Real anvil, real PostgreSQL.
 */
const kit = await createIndexerKit('verify_payments');
const deps = kit.deps();
const clock = createManualClock(new Date());
const GRACE = 60_000;
const verifyDeps = {
  db: kit.db.db,
  chains: kit.registry,
  stores: kit.stores,
  rpcs: new Map([[CHAIN_ID, deps.rpc]]),
  clock,
  graceMs: GRACE,
};
let seq = 0;

/** A CONFIRMED direct payment of 25 USDT (fee 0) paid by `txHash` to the merchant wallet. */
function confirmedIntent(txHash: string): Promise<string> {
  return kit.confirmedIntent(txHash, { observedAt: clock.now() });
}

async function findingsOf(id: string): Promise<Array<{ kind: string; details: Record<string, unknown> }>> {
  const { rows } = await kit.db.db.execute<{ kind: string; details: Record<string, unknown> }>(
    sql`select kind, details from findings where ref_id = ${id} and resolved_at is null order by kind`,
  );
  return rows;
}

async function pay(to: `0x${string}`, amount: bigint): Promise<string> {
  const label = `buyer-${seq++}`;
  await kit.chain.mint('USDT', await kit.chain.wallet(label), amount);
  return (await kit.chain.transfer('USDT', label, to, amount)).txHash;
}

describe('verifyPayments', () => {
  it('behavior: nothing is read before the grace; then a hash that does not exist is a critical finding', async () => {
    const missing = `0x${'ab'.repeat(32)}`;
    const id = await confirmedIntent(missing);
    expect(await verifyPayments(verifyDeps)).toBe(0);
    clock.advance(GRACE + 1);
    expect(await verifyPayments(verifyDeps)).toBe(1);
    expect((await findingsOf(id)).map((f) => f.kind)).toEqual(['payment_tx_not_found']);
    // Not read again while that finding is fresh.
    expect(await verifyPayments(verifyDeps)).toBe(0);
  });

  it('behavior: a receipt that pays another recipient is a finding, and the money stays in in_transit', async () => {
    const stranger = await kit.chain.wallet('stranger');
    const hash = await pay(stranger, 25_000_000n);
    const id = await confirmedIntent(hash);
    clock.advance(GRACE + 1);
    await verifyPayments(verifyDeps);
    const findings = await findingsOf(id);
    expect(findings.map((f) => f.kind)).toEqual(['recipient_mismatch']);
    expect(findings[0]!.details.expected_recipient).toBe(kit.merchant.toLowerCase());
    const proofs = await kit.db.db.execute(
      sql`select 1 from ledger_entries where ref_id = ${id} and kind = 'chain.payment_proven'`,
    );
    expect(proofs.rows).toEqual([]);
  });

  it("error: an intent of st_a whose tx_to and receipt are st_b's merchant wallet is a finding, never a proof", async () => {
    const walletB = kit.stores[1]!.wallets.get(CHAIN_ID)!.merchant;
    const hash = await pay(walletB, 25_000_000n);
    const id = await kit.confirmedIntent(hash, { txTo: walletB, observedAt: clock.now() });
    // Already at the confirmation: tx_to is not st_a's wallet.
    expect((await findingsOf(id)).map((f) => f.kind)).toEqual(['recipient_not_store_wallet']);
    clock.advance(GRACE + 1);
    await verifyPayments(verifyDeps);
    const findings = await findingsOf(id);
    expect(findings.map((f) => f.kind)).toEqual(['recipient_not_store_wallet']);
    expect(findings[0]!.details).toMatchObject({
      tx_to: walletB.toLowerCase(),
      store_wallet: kit.merchant.toLowerCase(),
      tx_to_stores: ['st_b'],
    });
  });

  it('behavior: a routed payment confirmed before its sweep hash is not verified against the buyer deposit', async () => {
    // The buyer paid 25 into a temporary wallet; the service kept 0.25 and has not reported the
    // sweep of 24.75 into the merchant wallet (tx_hash_2) yet.
    const deposit = await pay(await kit.chain.wallet('temporary'), 25_000_000n);
    const id = await kit.confirmedIntent(deposit, { net: '24.75', fee: '0.25', observedAt: clock.now() });
    clock.advance(GRACE + 1);
    // Before: the deposit was read as the payment: recipient_mismatch and amount_mismatch, false.
    expect(await verifyPayments(verifyDeps)).toBe(0);
    expect(await findingsOf(id)).toEqual([]);
  });

  it('behavior: a good receipt is stored and proven at finality by the indexer and the matcher (rule 2)', async () => {
    // The indexer has read up to here; the payment comes after, and verification runs first.
    await indexChainPass(deps, CHAIN_ID);
    const hash = await pay(kit.merchant, 25_000_000n);
    const id = await confirmedIntent(hash);
    clock.advance(GRACE + 1);
    await verifyPayments(verifyDeps);
    const stored = await kit.db.db.execute<{ source: string; state: string }>(
      sql`select source, state from chain_transfers where tx_hash = ${hash.toLowerCase()}`,
    );
    expect(stored.rows).toEqual([{ source: 'receipt', state: 'pending' }]);
    expect(await findingsOf(id)).toEqual([]);
    await kit.raw('anvil_mine', ['0x3']);
    await indexChainPass(deps, CHAIN_ID);
    const applied = await settleTransfers(kit.applyDeps(clock, GRACE), CHAIN_ID);
    expect(applied.applied).toBeGreaterThan(0);
    const proof = await kit.db.db.execute<{ kind: string }>(
      sql`select kind from ledger_entries where ref_id = ${id} order by id`,
    );
    expect(proof.rows.map((r) => r.kind)).toEqual(['checkout.confirmed', 'chain.payment_proven']);
  });
});

describe('suspense is a waiting room', () => {
  it('behavior: a transfer booked to suspense before its intent was confirmed moves to the intent when it is', async () => {
    clock.set(new Date());
    const hash = await pay(kit.merchant, 25_000_000n);
    await kit.raw('anvil_mine', ['0x3']);
    await indexChainPass(deps, CHAIN_ID);
    const applyDeps = kit.applyDeps(clock, GRACE);
    // Within the grace the transfer waits; after it, rule 9 books it to suspense.
    await settleTransfers(applyDeps, CHAIN_ID);
    const metadataOf = sql`metadata->>'tx_hash' = ${hash.toLowerCase()}`;
    const before = await kit.db.db.execute(sql`select kind from ledger_entries where ${metadataOf}`);
    expect(before.rows).toEqual([]);
    clock.advance(2 * GRACE);
    await settleTransfers(applyDeps, CHAIN_ID);
    const suspense = await kit.db.db.execute<{ kind: string }>(
      sql`select kind from ledger_entries where ${metadataOf} order by id`,
    );
    expect(suspense.rows.map((r) => r.kind)).toEqual(['chain.transfer_in_unmatched']);

    const id = await confirmedIntent(hash);
    const { rows } = await kit.db.db.execute<{ kind: string }>(sql`
      select kind from ledger_entries where ref_id = ${id} or ${metadataOf} or reverses_entry_id in
        (select id from ledger_entries where ${metadataOf}) order by id`);
    expect(rows.map((r) => r.kind)).toEqual([
      'chain.transfer_in_unmatched',
      'checkout.confirmed',
      'chain.transfer_in_unmatched.reversal',
      'chain.payment_proven',
    ]);
    const open = await kit.db.db.execute(sql`
      select 1 from findings where kind = 'unmatched_transfer_in' and resolved_at is null and details->>'tx_hash' = ${hash.toLowerCase()}`);
    expect(open.rows).toEqual([]);
  });
});

// A node that lags: a second anvil of the same chain id that never saw the payments.
const lagging = await startAnvil({ chainId: CHAIN_ID });
afterAll(() => lagging.stop());
const laggingDeps = { ...verifyDeps, rpcs: new Map([[CHAIN_ID, kit.deps([lagging.rpcUrl]).rpc]]) };

describe('verification findings clear with their cause', () => {
  /** Paid on chain, confirmed, and verified after the grace against the lagging node: not found. */
  async function notFoundWhileLagging(): Promise<{ id: string; hash: string }> {
    clock.set(new Date());
    const hash = await pay(kit.merchant, 25_000_000n);
    const id = await confirmedIntent(hash);
    clock.advance(GRACE + 1);
    await verifyPayments(laggingDeps);
    expect((await findingsOf(id)).map((f) => f.kind)).toEqual(['payment_tx_not_found']);
    return { id, hash };
  }

  it('behavior: a payment_tx_not_found raised while the node lagged resolves when verification later finds the receipt', async () => {
    const { id, hash } = await notFoundWhileLagging();
    // The retry comes 10 minutes after the finding was last seen.
    await kit.db.db.execute(
      sql`update findings set last_seen_at = last_seen_at - interval '11 minutes' where ref_id = ${id}`,
    );
    expect(await verifyPayments(verifyDeps)).toBeGreaterThan(0);
    expect(await findingsOf(id)).toEqual([]);
    const stored = await kit.db.db.execute(
      sql`select 1 from chain_transfers where tx_hash = ${hash.toLowerCase()}`,
    );
    expect(stored.rows).toHaveLength(1);
  });

  it('behavior: a payment_tx_not_found raised while the node lagged resolves when the indexer stores and proves the payment', async () => {
    const { id } = await notFoundWhileLagging();
    await kit.raw('anvil_mine', ['0x3']);
    await indexChainPass(deps, CHAIN_ID);
    await settleTransfers(kit.applyDeps(clock, GRACE), CHAIN_ID);
    const proof = await kit.db.db.execute<{ kind: string }>(
      sql`select kind from ledger_entries where ref_id = ${id} order by id`,
    );
    expect(proof.rows.map((r) => r.kind)).toEqual(['checkout.confirmed', 'chain.payment_proven']);
    expect(await findingsOf(id)).toEqual([]);
  });

  it('behavior: an acknowledged critical finding leaves stablebooks_findings_open, as it leaves the alert jobs (CriticalFindings stops firing)', async () => {
    const { id } = await notFoundWhileLagging();
    const metrics = createMetrics();
    attachCollectors(metrics, { db: kit.db.db, queues: [], ttlMs: 0 });
    const open = () =>
      metricValue(metrics, 'stablebooks_findings_open', {
        kind: 'payment_tx_not_found',
        severity: 'critical',
      });
    const before = await open();
    expect(before).toBeGreaterThan(0);
    const { rows } = await kit.db.db.execute<{ id: string }>(
      sql`select id::text from findings where ref_id = ${id} and kind = 'payment_tx_not_found' and resolved_at is null`,
    );
    expect((await ackFinding(kit.db.db, BigInt(rows[0]!.id), 'node lag, watching it')).kind).toBe('acked');
    expect(await open()).toBe(before - 1);
    // Acked is not resolved: the finding itself stays open until its cause clears.
    expect((await findingsOf(id)).map((f) => f.kind)).toEqual(['payment_tx_not_found']);
  });
});
