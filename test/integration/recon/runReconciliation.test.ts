import { mkdtempSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { applyChainTransfers } from '../../../src/chain/applyChainTransfers.ts';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { createManualClock } from '../../../src/clock.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import { createLogger } from '../../../src/logging/logger.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import { type ReconDeps, runReconciliation } from '../../../src/recon/runReconciliation.ts';
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
    stores: kit.stores,
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
      { chains: kit.registry, accounts },
      { storeId: 'st_a', intent: i, source: 'poll', observedAt: clock.now() },
    ),
  );
}

/** The inbox row intake stores and processing marks, for a checkout webhook of this intent. */
async function webhookArrived(id: string, actualPaid: string): Promise<void> {
  const body = JSON.stringify({ all_svc_checkout_intent_id: id, status: 20, actual_paid_amount: actualPaid });
  await kit.db.db.execute(sql`
    insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body, processed_at, ref_id)
    values (${`wh-${id}-${seq++}`}, 'st_a', 'checkout', 'processed', '{}'::jsonb, ${Buffer.from(body)}, now(), ${id})`);
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
  await applyChainTransfers(
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
    const run = await runReconciliation(deps, { period: period() });
    expect(await openFindings()).toEqual([]);
    expect(run.passed).toBe(true);
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
    expect(run.report.trialBalance.every((t) => t.net === '0')).toBe(true);
    // Files in every format, with their checksums in recon_runs.
    const names = run.files.map((f) => f.name).sort();
    expect(names).toEqual(
      expect.arrayContaining(['report.json', 'report.md', 'report.html', 'csv/accounts.csv']),
    );
    const json = JSON.parse(await readFile(join(run.dir, 'report.json'), 'utf8')) as { version: number };
    expect(json.version).toBe(1);
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
});
