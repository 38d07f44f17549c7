import { mkdtempSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { createManualClock } from '../../../src/clock.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import { createLogger } from '../../../src/logging/logger.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import { proofRefId } from '../../../src/recon/checks/assertions.ts';
import { type ReconDeps, runReconciliation } from '../../../src/recon/runReconciliation.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * Reconciliation runs on real PostgreSQL and a real chain (anvil): facts are written through the
 * daemon's own paths (applyIntentSnapshot for the API's view, the indexer and matcher for the
 * chain, webhook_inbox rows as intake and processing leave them), then the run finds, refreshes
 * and resolves findings, and its report adds up to the ledger.
 */
const kit = await createIndexerKit('recon_run');
const chainDeps = kit.deps();
const accounts = createAccountCache();
const clock = createManualClock(new Date());
const HOUR = 3_600_000;
const logs: string[] = [];
const deps: ReconDeps = {
  db: kit.db.db,
  config: {
    // Par 1 USD per coin: every posting is valued, so a clean period has no valuation_rate_missing.
    stores: kit.stores.map((s) => ({
      ...s,
      par: new Map([
        ['USDT', '1'],
        ['USDC', '1'],
      ]),
    })),
    chains: kit.registry,
    recon: { inTransitWindowMs: HOUR, webhookWindowMs: HOUR, stuckMs: 24 * HOUR, amountTolerance: 0n },
    reportsDir: mkdtempSync(join(tmpdir(), 'sb-recon-')),
    refundGraceMs: 24 * HOUR,
  },
  rpcs: new Map([[CHAIN_ID, chainDeps.rpc]]),
  logger: createLogger({
    level: 'info',
    destination: new Writable({
      write(chunk, _enc, done) {
        logs.push(String(chunk));
        done();
      },
    }),
  }),
  clock,
};
let seq = 0;

function intent(id: string, patch: Partial<CheckoutIntent>): CheckoutIntent {
  return {
    all_svc_checkout_intent_id: id,
    currency: null,
    currency_symbol: null,
    amount_cents: null,
    chain_id: CHAIN_ID,
    amount_coins: '25',
    coin_symbol: 'USDT',
    coin_contract: kit.chain.tokens.USDT.address,
    currency_rate: null,
    status: 20,
    order_id: null,
    order_description: null,
    user_id: null,
    user_name: null,
    error_message: null,
    tx_hash: null,
    tx_hash_2: null,
    tx_from: null,
    tx_to: kit.merchant,
    actual_paid_amount: '25',
    service_fee_amount: '0',
    net_income_amount: '25',
    payment_method_type: 1,
    accepted_stable_coins: 1,
    ...patch,
  } as CheckoutIntent;
}

async function observe(i: CheckoutIntent): Promise<void> {
  await kit.db.db.transaction((tx) =>
    applyIntentSnapshot(
      tx,
      { chains: kit.registry, stores: kit.stores, accounts },
      { storeId: 'st_a', intent: i, source: 'poll', observedAt: clock.now() },
    ),
  );
}

/** The inbox row intake stores and processing marks, for a checkout webhook of this intent. */
async function webhookArrived(id: string, actualPaid: string): Promise<void> {
  const body = JSON.stringify({ all_svc_checkout_intent_id: id, status: 20, actual_paid_amount: actualPaid });
  await kit.db.db.execute(sql`
    insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body, processed_at, ref_id, actual_paid_amount)
    values (${`wh-${id}-${seq++}`}, 'st_a', 'checkout', 'processed', '{}'::jsonb, ${Buffer.from(body)}, now(), ${id}, ${actualPaid}::numeric)`);
}

async function pay(to: `0x${string}`, amount: bigint): Promise<string> {
  const label = `buyer-${seq++}`;
  await kit.chain.mint('USDT', await kit.chain.wallet(label), amount);
  return (await kit.chain.transfer('USDT', label, to, amount)).txHash;
}

/** Indexes to the head, makes it final and lets the matcher book it. */
async function settleChain(): Promise<void> {
  await kit.raw('anvil_mine', ['0x3']);
  await indexChainPass(chainDeps, CHAIN_ID);
  await settleTransfers(
    {
      db: kit.db.db,
      config: { stores: kit.stores, chains: kit.registry },
      accounts,
      clock,
      unmatchedGraceMs: 10 * 60_000,
    },
    CHAIN_ID,
  );
}

const period = () => ({
  from: new Date(clock.now().getTime() - 48 * HOUR),
  to: new Date(clock.now().getTime() + HOUR),
});

async function openFindings(): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ k: string }>(sql`
    select kind || ' ' || ref_id as k from findings where resolved_at is null order by 1`);
  return rows.map((r) => r.k);
}

describe('runReconciliation', () => {
  it('behavior: a clean period has no findings, proofs pass, and the report adds up to the ledger', async () => {
    const id = `clean-${seq++}`;
    const hash = await pay(kit.merchant, 25_000_000n);
    await observe(intent(id, { tx_hash: hash }));
    await webhookArrived(id, '25');
    await settleChain();
    clock.advance(2 * HOUR);
    const metrics = createMetrics();
    const run = await runReconciliation({ ...deps, metrics }, { period: period() });
    expect(await openFindings()).toEqual([]);
    expect(run.passed).toBe(true);
    // The run's proofs refresh the balance-proof gauges (the dashboard and BalanceProofFailed read them).
    const gauge = (await metrics.registry.getMetricsAsJSON()).find(
      (m) => m.name === 'stablebooks_balance_proof_ok',
    );
    const values = (gauge as { values: Array<{ value: number; labels: Record<string, string> }> }).values;
    // One series per chain, token and wallet role (two stores' merchant wallets share one: the worst shows).
    const series = new Set(run.report.balanceProofs.map((p) => `${p.chainId} ${p.symbol} ${p.role}`));
    expect(values.length).toBe(series.size);
    expect(values.every((v) => v.value === 1)).toBe(true);
    expect(run.report.checks.filter((c) => c.status !== 'pass')).toEqual([]);
    expect(run.report.balanceProofs.length).toBeGreaterThan(0);
    expect(run.report.balanceProofs.every((p) => p.result === 'pass')).toBe(true);
    const confirmed = run.report.payments.byStatus.filter((r) => r.status === 'CONFIRMED');
    expect(confirmed).toEqual([
      expect.objectContaining({
        storeId: 'st_a',
        symbol: 'USDT',
        count: 1,
        requested: '25',
        paid: '25',
        net: '25',
      }),
    ]);
    const wallet = run.report.accounts.find((a) => a.code === `assets:wallet:st_a:${CHAIN_ID}:USDT`);
    expect(wallet).toMatchObject({ opening: '0', debits: '25', closing: '25' });
    // Valued in the store's functional currency (USD) at par, beside the same account's tokens.
    const valued = run.report.valuation.find((v) => v.storeId === 'st_a');
    expect(valued).toMatchObject({
      currency: 'USD',
      revenue: {
        accounts: ['income:sales'],
        tokens: [{ chainId: CHAIN_ID, symbol: 'USDT', amount: '-25' }],
        value: '-25.00',
        unvalued: 0,
      },
      fxResult: '0.00',
    });
    expect(run.report.trialBalance.every((t) => t.net === '0')).toBe(true);
    // Files in every format, with their checksums in recon_runs.
    const names = run.files.map((f) => f.name).sort();
    expect(names).toEqual(
      expect.arrayContaining(['report.json', 'report.md', 'report.html', 'csv/accounts.csv']),
    );
    const json = JSON.parse(await readFile(join(run.dir, 'report.json'), 'utf8')) as { version: number };
    expect(json.version).toBe(2);
    const { rows } = await kit.db.db.execute<{ status: string; passed: boolean; files: unknown[] }>(
      sql`select status, passed, files from recon_runs where id = ${run.runId}::bigint`,
    );
    expect(rows[0]).toMatchObject({ status: 'completed', passed: true });
    expect(rows[0]!.files).toHaveLength(run.files.length);
  });

  it('behavior: a rerun of the same period replaces its row and its files', async () => {
    const p = period();
    const first = await runReconciliation(deps, { period: p });
    const second = await runReconciliation(deps, { period: p });
    expect(second.runId).toBe(first.runId);
    expect(second.dir).toBe(first.dir);
    const { rows } = await kit.db.db.execute<{ n: string }>(sql`
      select count(*)::text as n from recon_runs where period_from = ${p.from.toISOString()}::timestamptz`);
    expect(rows[0]!.n).toBe('1');
  });

  it('behavior: missing webhook is found after its window and resolves when the webhook arrives', async () => {
    const id = `nowebhook-${seq++}`;
    const hash = await pay(kit.merchant, 25_000_000n);
    await observe(intent(id, { tx_hash: hash }));
    await settleChain();
    await runReconciliation(deps, { period: period() });
    expect(await findingsOf(id)).toEqual([]); // within the window: not yet
    clock.advance(HOUR + 1);
    const run = await runReconciliation(deps, { period: period() });
    expect(await findingsOf(id)).toEqual(['missing_webhook']);
    expect(run.report.findings.new.map((f) => `${f.kind} ${f.refId}`)).toContain(`missing_webhook ${id}`);
    await webhookArrived(id, '25');
    const after = await runReconciliation(deps, { period: period() });
    expect(await findingsOf(id)).toEqual([]);
    expect(after.report.findings.resolved.map((f) => `${f.kind} ${f.refId}`)).toContain(
      `missing_webhook ${id}`,
    );
  });

  it('behavior: a confirmation without chain proof is found in in_transit, and clears when the chain proves it', async () => {
    const id = `noproof-${seq++}`;
    const hash = await pay(kit.merchant, 25_000_000n);
    await observe(intent(id, { tx_hash: hash }));
    await webhookArrived(id, '25');
    clock.advance(HOUR + 1);
    const run = await runReconciliation(deps, { period: period() });
    expect(await findingsOf(id)).toEqual(['webhook_without_chain_proof']);
    expect(run.report.checks.find((c) => c.name === 'clearing.in_transit')?.status).toBe('fail');
    await settleChain();
    await runReconciliation(deps, { period: period() });
    expect(await findingsOf(id)).toEqual([]);
  });

  it('behavior: webhook and API disagreeing on the amount is amount_mismatch; an underpayment is reported', async () => {
    const id = `mismatch-${seq++}`;
    const hash = await pay(kit.merchant, 24_000_000n);
    await observe(
      intent(id, { tx_hash: hash, actual_paid_amount: '24', net_income_amount: '24', amount_coins: '25' }),
    );
    await webhookArrived(id, '23');
    await settleChain();
    const run = await runReconciliation(deps, { period: period() });
    expect(await findingsOf(id)).toEqual(['amount_mismatch', 'underpaid']);
    const finding = run.report.findings.new.find((f) => f.refId === id && f.kind === 'amount_mismatch');
    expect(finding?.details).toMatchObject({
      api_actual_paid_amount: '24',
      webhook_actual_paid_amount_min: '23',
    });
    expect(run.report.payments.underpaid.map((u) => [u.intentId, u.difference])).toContainEqual([id, '-1']);
  });

  it('behavior: an intent stuck in VIEWED is found after the stuck window and resolves when it ends', async () => {
    const id = `stuck-${seq++}`;
    await observe(
      intent(id, { status: 2, actual_paid_amount: null, service_fee_amount: null, net_income_amount: null }),
    );
    clock.advance(24 * HOUR + 1);
    await runReconciliation(deps, { period: period() });
    expect(await findingsOf(id)).toEqual(['stuck_intent']);
    await observe(
      intent(id, { status: -5, actual_paid_amount: null, service_fee_amount: null, net_income_amount: null }),
    );
    await runReconciliation(deps, { period: period() });
    expect(await findingsOf(id)).toEqual([]);
  });

  it('behavior: an intent creation of unknown outcome is found until an intent with its order_id is tracked', async () => {
    const order = `order-${seq++}`;
    const creation = async (outcome: string, minutesAgo: number, orderId: string | null) =>
      (
        await kit.db.db.execute<{ id: string }>(sql`
          insert into checkout_intent_creations (store_id, order_id, request, outcome, created_at)
          values ('st_a', ${orderId}, '{}'::jsonb, ${outcome},
                  ${new Date(clock.now().getTime() - minutesAgo * 60_000).toISOString()}::timestamptz)
          returning id::text`)
      ).rows[0]!.id;
    const unknown = await creation('unknown', 1, order);
    const stalePending = await creation('pending', 24 * 60, null);
    const freshPending = await creation('pending', 1, null);
    const failed = await creation('failed', 24 * 60, null);
    await runReconciliation(deps, { period: period() });
    // Before: nothing reported them; an intent the service may have created went unfollowed.
    expect(await findingsOf(unknown)).toEqual(['intent_creation_unresolved']);
    expect(await findingsOf(stalePending)).toEqual(['intent_creation_unresolved']);
    expect(await findingsOf(freshPending)).toEqual([]);
    expect(await findingsOf(failed)).toEqual([]);

    const id = `created-${seq++}`;
    await observe(
      intent(id, {
        status: 1,
        order_id: order,
        actual_paid_amount: null,
        service_fee_amount: null,
        net_income_amount: null,
      }),
    );
    await runReconciliation(deps, { period: period() });
    expect(await findingsOf(unknown)).toEqual([]);
    expect(await findingsOf(stalePending)).toEqual(['intent_creation_unresolved']);
    await kit.db.ownerDb.execute(
      sql`delete from checkout_intent_creations where id = ${stalePending}::bigint`,
    );
  });

  it('behavior: a transfer not yet matched fails the balance proof with a reason, resolved once it is booked', async () => {
    const stranger = await kit.chain.wallet(`stranger-${seq++}`);
    await kit.chain.mint('USDT', stranger, 7_000_000n);
    await kit.chain.transfer('USDT', `stranger-${seq - 1}`, kit.merchant, 7_000_000n);
    await kit.raw('anvil_mine', ['0x3']);
    await indexChainPass(chainDeps, CHAIN_ID);
    // Final, but inside the matcher's grace: the ledger cannot be compared yet.
    const run = await runReconciliation(deps, { period: period() });
    expect(run.passed).toBe(false);
    const proofs = run.report.checks.find((c) => c.name === 'assertions.balance_proofs');
    expect(proofs?.status).toBe('error');
    expect(proofs?.detail).toMatch(/not matched yet/);
    expect((await openFindings()).some((f) => f.startsWith('balance_proof_failed '))).toBe(true);
    clock.advance(11 * 60_000);
    await settleChain();
    const after = await runReconciliation(deps, { period: period() });
    expect(after.report.balanceProofs.every((p) => p.result === 'pass')).toBe(true);
    expect((await openFindings()).some((f) => f.startsWith('balance_proof_failed '))).toBe(false);
    // The stranger's money sits in suspense with its finding, and the suspense check says so.
    expect((await openFindings()).some((f) => f.startsWith('unmatched_transfer_in '))).toBe(true);
    expect(after.report.checks.find((c) => c.name === 'clearing.suspense')?.status).toBe('fail');
    expect(after.passed).toBe(true);
  });

  it('behavior: a wallet whose proof passes again is resolved while another wallet cannot be proven yet', async () => {
    const token = kit.chain.tokens.USDT.address;
    const passing = proofRefId({ chainId: CHAIN_ID, token, wallet: kit.merchant });
    // An earlier run found st_a's merchant wallet off; it agrees with the chain again now.
    await kit.db.db.execute(sql`
      insert into findings (kind, severity, store_id, ref_type, ref_id, details)
      values ('balance_proof_failed', 'critical', null, 'wallet', ${passing}, '{}'::jsonb)`);
    // st_b's merchant wallet has a final transfer still inside the matcher's grace: not provable yet.
    const other = kit.stores[1]!.wallets.get(CHAIN_ID)!.merchant;
    const label = `stranger-${seq++}`;
    await kit.chain.mint('USDT', await kit.chain.wallet(label), 1_000_000n);
    await kit.chain.transfer('USDT', label, other, 1_000_000n);
    await kit.raw('anvil_mine', ['0x3']);
    await indexChainPass(chainDeps, CHAIN_ID);
    const waitingRef = proofRefId({ chainId: CHAIN_ID, token, wallet: other });

    const run = await runReconciliation(deps, { period: period() });
    expect(run.report.checks.find((c) => c.name === 'assertions.balance_proofs')?.status).toBe('error');
    const open = await openFindings();
    expect(open).toContain(`balance_proof_failed ${waitingRef}`);
    expect(open).not.toContain(`balance_proof_failed ${passing}`);
    expect(run.report.findings.resolved.map((f) => `${f.kind} ${f.refId}`)).toContain(
      `balance_proof_failed ${passing}`,
    );

    clock.advance(11 * 60_000);
    await settleChain();
    await runReconciliation(deps, { period: period() });
    expect((await openFindings()).some((f) => f.startsWith('balance_proof_failed '))).toBe(false);
  });

  it('behavior: a cancelled link without refund is refund_overdue, and a refund without webhook is missing_webhook', async () => {
    const link = `cl-${seq++}`;
    const cancelledAt = new Date(clock.now().getTime() - 25 * HOUR).toISOString();
    await kit.db.db.execute(sql`
      insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                           claim_link_id, link_status, funded_at, cancelled_at)
      values (${`po-${link}`}, 'st_a', ${`ref-${link}`}, '5', 1, ${CHAIN_ID}, ${kit.chain.tokens.USDT.address.toLowerCase()},
              'created', ${link}, 'cancelled', ${cancelledAt}::timestamptz, ${cancelledAt}::timestamptz)`);
    await runReconciliation(deps, { period: period() });
    expect(await findingsOf(link)).toEqual(['refund_overdue']);
    // The refund is proven on chain (the matcher sets refunded_at), but its webhook never came.
    await kit.db.db.execute(sql`
      update payouts set refunded_at = ${new Date(clock.now().getTime() - 2 * HOUR).toISOString()}::timestamptz
      where claim_link_id = ${link}`);
    await runReconciliation(deps, { period: period() });
    expect(await findingsOf(link)).toEqual(['missing_webhook']);
    await kit.db.db.execute(sql`
      insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body, processed_at, ref_id)
      values (${`wh-${link}`}, 'st_a', 'claim-links', 'processed', '{}'::jsonb, ${Buffer.from('{}')}, now(), ${link})`);
    await runReconciliation(deps, { period: period() });
    expect(await findingsOf(link)).toEqual([]);
  });

  it('behavior: a link with both cancelled_at and expired_at (an old row) counts once in the payout totals, as the earlier', async () => {
    const totals = async () => {
      const run = await runReconciliation(deps, { period: period() });
      const of = (outcome: string) =>
        run.report.payouts.filter((p) => p.outcome === outcome).reduce((n, p) => n + p.count, 0);
      return { cancelled: of('cancelled'), expired: of('expired') };
    };
    const before = await totals();
    const link = `cl-both-${seq++}`;
    const expiredAt = new Date(clock.now().getTime() - 3 * HOUR).toISOString();
    const cancelledAt = new Date(clock.now().getTime() - 2 * HOUR).toISOString();
    await kit.db.db.execute(sql`
      insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                           claim_link_id, link_status, funded_at, expired_at, cancelled_at, refunded_at)
      values (${`po-${link}`}, 'st_a', ${`ref-${link}`}, '5', 1, ${CHAIN_ID}, ${kit.chain.tokens.USDT.address.toLowerCase()},
              'created', ${link}, 'cancelled', ${expiredAt}::timestamptz, ${expiredAt}::timestamptz,
              ${cancelledAt}::timestamptz, ${cancelledAt}::timestamptz)`);
    // Before: counted under both, so the closes added up to more links than were funded.
    expect(await totals()).toEqual({ cancelled: before.cancelled, expired: before.expired + 1 });
  });

  it('behavior: a link the service calls claimed whose claim the chain side has not booked is claim_unproven until it does', async () => {
    const link = `cl-claimed-${seq++}`;
    const since = new Date(clock.now().getTime() - 2 * HOUR).toISOString();
    await kit.db.db.execute(sql`
      insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                           claim_link_id, link_status, funded_at, updated_at)
      values (${`po-${link}`}, 'st_a', ${`ref-${link}`}, '5', 1, ${CHAIN_ID}, ${kit.chain.tokens.USDT.address.toLowerCase()},
              'created', ${link}, 'claimed', ${since}::timestamptz, ${since}::timestamptz)`);
    await runReconciliation(deps, { period: period() });
    // Before: nothing; a claimed link is never expired, so its money sat in claim_pool unremarked.
    expect(await findingsOf(link)).toEqual(['claim_unproven']);
    await kit.db.db.execute(sql`
      update payouts set claimed_at = ${since}::timestamptz where claim_link_id = ${link}`);
    await runReconciliation(deps, { period: period() });
    expect(await findingsOf(link)).toEqual([]);
  });

  it('behavior: a link the service reported claimed (50108) is claim_unproven from that report, whatever wrote the row since; the finding carries the report', async () => {
    const link = `cl-reported-${seq++}`;
    const reportedAt = new Date(clock.now().getTime() - 2 * HOUR);
    // A cancel was answered 50108 "claimed" two hours ago; the row was written again just now.
    await kit.db.db.execute(sql`
      insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome,
                           claim_link_id, link_status, funded_at, claimed_reported_at, updated_at)
      values (${`po-${link}`}, 'st_a', ${`ref-${link}`}, '5', 1, ${CHAIN_ID}, ${kit.chain.tokens.USDT.address.toLowerCase()},
              'created', ${link}, 'claimed', ${reportedAt.toISOString()}::timestamptz,
              ${reportedAt.toISOString()}::timestamptz, ${clock.now().toISOString()}::timestamptz)`);
    await runReconciliation(deps, { period: period() });
    // Before: dated from updated_at, so any write to the row restarted the wait, and the finding
    // did not say what the service had reported, or when.
    expect(await findingsOf(link)).toEqual(['claim_unproven']);
    const { rows } = await kit.db.db.execute<{ details: Record<string, string | null> }>(sql`
      select details from findings where kind = 'claim_unproven' and ref_id = ${link} and resolved_at is null`);
    const details = rows[0]!.details;
    expect(new Date(details.claimed_reported_at!)).toEqual(reportedAt);
    expect(new Date(details.since!)).toEqual(reportedAt);
    expect(details.what).toMatch(
      /service reported the link claimed; no claim out of its pool is booked on chain \(rule 6\)/,
    );
    expect(details.what).toMatch(/its pool is not known/);
    // The chain side books the claim (rule 6 sets claimed_at): the finding resolves.
    await kit.db.db.execute(sql`
      update payouts set claimed_at = ${clock.now().toISOString()}::timestamptz where claim_link_id = ${link}`);
    await runReconciliation(deps, { period: period() });
    expect(await findingsOf(link)).toEqual([]);
  });

  it('behavior: the report counts every finding and samples 100 per kind; findings.csv lists them all', async () => {
    await kit.db.db.execute(sql`
      insert into findings (kind, severity, store_id, ref_type, ref_id, details)
      select 'unmatched_transfer_out', 'info', 'st_a', 'chain_transfer', 'sample-' || g, jsonb_build_object('n', g)
      from generate_series(1, 150) g`);
    const { rows } = await kit.db.db.execute<{ n: number }>(sql`
      select count(*)::int as n from findings where kind = 'unmatched_transfer_out' and resolved_at is null`);
    const total = rows[0]!.n;
    expect(total).toBeGreaterThanOrEqual(150);

    const run = await runReconciliation(deps, { period: period() });
    const { findings } = run.report;
    expect(findings.byKind.find((k) => k.kind === 'unmatched_transfer_out')?.new).toBe(total);
    expect(findings.counts.new).toBe(findings.byKind.reduce((n, k) => n + k.new, 0));
    expect(findings.new.filter((f) => f.kind === 'unmatched_transfer_out')).toHaveLength(100);
    expect(findings.samplePerKind).toBe(100);
    expect(findings.fullList).toBe('csv/findings.csv');
    const ages = findings.unresolvedByAge.find((a) => a.kind === 'unmatched_transfer_out')!;
    expect(ages.lt1h + ages.h1to1d + ages.d1to7d + ages.gt7d).toBe(total);

    const json = JSON.parse(await readFile(join(run.dir, 'report.json'), 'utf8'));
    expect(json.version).toBe(2);
    expect(json.findings.new).toHaveLength(findings.new.length);
    const csv = (await readFile(join(run.dir, 'csv', 'findings.csv'), 'utf8')).trimEnd().split('\n');
    expect(csv[0]).toBe(
      'list,id,kind,severity,store_id,ref_type,ref_id,first_seen_at,last_seen_at,resolved_at,acked_at,ack_note,details',
    );
    const lines = csv.slice(1).map((l) => l.split(','));
    expect(lines).toHaveLength(findings.counts.new + findings.counts.open + findings.counts.resolved);
    expect(lines.filter((l) => l[0] === 'new' && l[2] === 'unmatched_transfer_out')).toHaveLength(total);
    // The report's samples are the first rows of each kind in the file, in the same order.
    const sampleIds = findings.new.filter((f) => f.kind === 'unmatched_transfer_out').map((f) => f.id);
    const fileIds = lines.filter((l) => l[0] === 'new' && l[2] === 'unmatched_transfer_out').map((l) => l[1]);
    expect(fileIds.slice(0, 100)).toEqual(sampleIds);
    const written = run.files.find((f) => f.name === join('csv', 'findings.csv'))!;
    expect(written.bytes).toBe(Buffer.byteLength(csv.join('\n')) + 1);
    await kit.db.ownerDb.execute(sql`delete from findings where ref_id like 'sample-%'`);
  });

  it('behavior: a store-scoped run resolves only its own store findings and an unknown store is refused', async () => {
    await expect(runReconciliation(deps, { period: period(), storeId: 'st_nope' })).rejects.toThrow(
      /st_nope is not in STORES_FILE/,
    );
    const run = await runReconciliation(deps, { period: period(), storeId: 'st_b' });
    expect(run.dir).toContain(join('st_b'));
    expect(run.report.storeId).toBe('st_b');
    expect(run.report.payments.byStatus).toEqual([]);
  });

  it("behavior: a store-scoped run proves its store's wallets and resolves their proof findings, not another store's", async () => {
    await settleChain();
    const all = await runReconciliation(deps, { period: period() });
    const merchants = all.report.balanceProofs.filter((p) => p.role === 'merchant');
    expect(merchants.filter((p) => p.result !== 'pass')).toEqual([]);
    const token = kit.chain.tokens.USDT.address;
    const merchantB = kit.stores[1]!.wallets.get(CHAIN_ID)!.merchant;
    const refA = proofRefId({ chainId: CHAIN_ID, token, wallet: kit.merchant });
    const refB = proofRefId({ chainId: CHAIN_ID, token, wallet: merchantB });
    // Earlier runs found both stores' merchant wallets off; each agrees with the chain again now.
    for (const ref of [refA, refB])
      await kit.db.db.execute(sql`
        insert into findings (kind, severity, store_id, ref_type, ref_id, details)
        values ('balance_proof_failed', 'critical', null, 'wallet', ${ref}, '{}'::jsonb)`);
    const custodyOpen = (await openFindings()).filter((f) => f.includes(kit.custody.toLowerCase()));

    const run = await runReconciliation(deps, { period: period(), storeId: 'st_a' });
    // st_a's merchant wallet and the custody wallet of its business (shared with st_b, proven whole).
    const wallets = [...new Set(run.report.balanceProofs.map((p) => `${p.role} ${p.wallet}`))].sort();
    expect(wallets).toEqual([
      `custody ${kit.custody.toLowerCase()}`,
      `merchant ${kit.merchant.toLowerCase()}`,
    ]);
    const open = await openFindings();
    expect(open).not.toContain(`balance_proof_failed ${refA}`);
    expect(run.report.findings.resolved.map((f) => `${f.kind} ${f.refId}`)).toContain(
      `balance_proof_failed ${refA}`,
    );
    // st_b's merchant wallet was not proven by this run: its finding is left as it was.
    expect(open).toContain(`balance_proof_failed ${refB}`);
    // The custody wallet (a payout of an earlier test is in flight there) is as the proof says.
    expect(open.filter((f) => f.includes(kit.custody.toLowerCase()))).toEqual(custodyOpen);

    await runReconciliation(deps, { period: period() });
    expect(await openFindings()).not.toContain(`balance_proof_failed ${refB}`);
  });

  it('behavior: finding ages are on the database clock that stamps them, whatever the skew of the run clock', async () => {
    await kit.db.db.execute(sql`
      insert into findings (kind, severity, store_id, ref_type, ref_id, details, first_seen_at, last_seen_at)
      values ('age_probe', 'info', 'st_a', 'probe', 'age-fresh', '{}'::jsonb, now(), now()),
             ('age_probe', 'info', 'st_a', 'probe', 'age-old', '{}'::jsonb, now() - interval '2 days', now())`);
    // The sandbox's clock runs days ahead of the database's; another one may lag behind it.
    for (const skew of [3 * 24 * HOUR, -3 * 24 * HOUR]) {
      const skewed = createManualClock(new Date(Date.now() + skew));
      const run = await runReconciliation(
        { ...deps, clock: skewed },
        {
          period: {
            from: new Date(skewed.now().getTime() - 48 * HOUR),
            to: new Date(skewed.now().getTime() + HOUR),
          },
          formats: ['json'],
        },
      );
      expect(run.report.findings.unresolvedByAge.find((a) => a.kind === 'age_probe')).toEqual({
        kind: 'age_probe',
        lt1h: 1,
        h1to1d: 0,
        d1to7d: 1,
        gt7d: 0,
      });
    }
    await kit.db.ownerDb.execute(sql`delete from findings where kind = 'age_probe'`);
  });
});

async function findingsOf(refId: string): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(
    sql`select kind from findings where ref_id = ${refId} and resolved_at is null order by kind`,
  );
  return rows.map((r) => r.kind);
}
