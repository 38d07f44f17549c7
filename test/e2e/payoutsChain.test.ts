import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createChainRpcs } from '../../src/chain/rpcClients.ts';
import type { DomainContext } from '../../src/context/domainContext.ts';
import { rawRpc } from '../../src/devservices/anvil.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { cancelPayout } from '../../src/payouts/cancelPayout.ts';
import { type CreatePayoutTuning, createPayout } from '../../src/payouts/createPayout.ts';
import { proveBalances } from '../../src/recon/balanceProofs.ts';
import type { SvcClient } from '../../src/svc/client.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * Claim links end to end (docs/accounting.md, rules 5 to 8): the sandbox funds, claims, cancels,
 * refunds and expires links with real token transfers on anvil; the daemon (every role, in
 * process) learns the pool wallet from the funding transfer and books the fee, the claim and the
 * refund when they are final. After each case the custody wallet's ledger balance equals its
 * balanceOf. Finality is 2 blocks deep; tests mine blocks to reach it.
 */
const pipeline = await startPipeline({ finalityDepth: 2 });
await pipeline.startDaemon();
const chain = [...pipeline.sandbox.world.chains.values()][0]!;
const rpcs = createChainRpcs(pipeline.config, createMetrics());
const FEE = 500_000n; // the sandbox's funding fee: 0.5 coin
let clientOverride: SvcClient | null = null;
// createPayout retries with the same reference_id itself: its client makes one attempt per call.
const singleAttempt = pipeline.sandbox.client('st_a', {
  retry: { maxAttempts: 1 },
  clock: pipeline.sandbox.world.clock,
});
const deps: DomainContext & CreatePayoutTuning = {
  ...pipeline.payments,
  client: () => clientOverride ?? singleAttempt,
  encryptionKey: pipeline.config.encryptionKey,
  sleep: async () => {},
};

let seq = 0;
const reference = (p: string) => `${p}-${Date.now().toString(36)}-${seq++}`;

const rpc = <T = unknown>(method: string, params: unknown[]) => rawRpc<T>(chain.rpcUrl, method, params);
const mine = (blocks: number) => rpc('anvil_mine', [`0x${blocks.toString(16)}`]);

async function create(ref: string, amount: string) {
  const { payout } = await createPayout(deps, {
    storeId: 'st_a',
    amount,
    coin: 'USDT',
    chain: chain.chainId,
    referenceId: ref,
  });
  return payout.claimLinkId!;
}

/** The kinds of a link's entries, once `kind` is among them (mining a block per check so finality moves). */
async function kindsOnce(linkId: string, kind: string): Promise<string[]> {
  return pipeline.waitFor(async () => {
    await mine(1);
    const { rows } = await pipeline.db.execute<{ kind: string }>(
      sql`select kind from ledger_entries where ref_id = ${linkId} order by id`,
    );
    const kinds = rows.map((r) => r.kind);
    return kinds.includes(kind) ? kinds : undefined;
  }, 40_000);
}

async function linesOf(linkId: string, kind: string): Promise<string[]> {
  const { rows } = await pipeline.db.execute<{ line: string }>(sql`
    select split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) || ' ' || p.amount::text as line
    from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
    where e.ref_id = ${linkId} and e.kind = ${kind} order by a.code`);
  return rows.map((r) => r.line);
}

async function expectCustodyProven(): Promise<void> {
  const proofs = await pipeline.waitFor(async () => {
    await mine(1);
    const all = await proveBalances({ db: pipeline.db, config: pipeline.config, rpcs });
    const custody = all.filter((p) => p.role === 'custody');
    return custody.every((p) => p.ok === true) ? custody : undefined;
  }, 40_000);
  expect(proofs.map((p) => p.symbol).sort()).toEqual(['USDC', 'USDT']);
  for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
}

async function waitLinkSent(linkId: string): Promise<void> {
  await pipeline.waitFor(async () => {
    const res = await pipeline.sandbox.control<{ status: string }>(`/_sandbox/claim_links/${linkId}`);
    return res.body.status === 'link_sent';
  });
}

describe('claim links on chain', () => {
  it('behavior: create then claim: funding fee settled, pool learnt, claim booked to payouts', async () => {
    const id = await create(reference('claim'), '5.25');
    expect(await kindsOnce(id, 'claim_link.funding_fee')).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
    ]);
    expect(await linesOf(id, 'claim_link.funding_fee')).toEqual([
      `assets:custody ${-FEE}`,
      `expense:payout_fees ${FEE}`,
    ]);
    await waitLinkSent(id);
    const claimed = await pipeline.sandbox.control(`/_sandbox/claim_links/${id}/claim`, {});
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
    await kindsOnce(id, 'claim_link.claimed');
    expect(await linesOf(id, 'claim_link.claimed')).toEqual([
      'assets:claim_pool -5250000',
      'expense:payouts 5250000',
    ]);
    await expectCustodyProven();
  });

  it('behavior: a cancel answered 50108 "claimed" records the report apart from claimed_at; the chain\'s claim then books rule 6 as usual', async () => {
    const id = await create(reference('reported'), '2.75');
    await kindsOnce(id, 'claim_link.funding_fee');
    await waitLinkSent(id);
    const claimed = await pipeline.sandbox.control(`/_sandbox/claim_links/${id}/claim`, {});
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
    await expect(cancelPayout(deps, id)).rejects.toThrow(/the service says it is claimed/);
    const state = async () =>
      (
        await pipeline.db.execute<{
          link_status: string;
          claimed_at: Date | null;
          claimed_reported_at: Date | null;
        }>(sql`select link_status, claimed_at, claimed_reported_at from payouts where claim_link_id = ${id}`)
      ).rows[0]!;
    // The claim's transfer is not final (nothing mined on top of it): only the service has spoken.
    const reported = await state();
    expect(reported).toMatchObject({ link_status: 'claimed', claimed_at: null });
    expect(reported.claimed_reported_at).not.toBeNull();
    expect(await kindsOnce(id, 'claim_link.claimed')).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.claimed',
    ]);
    expect(await linesOf(id, 'claim_link.claimed')).toEqual([
      'assets:claim_pool -2750000',
      'expense:payouts 2750000',
    ]);
    const proven = await state();
    expect(proven.link_status).toBe('claimed');
    expect(proven.claimed_at).not.toBeNull();
    expect(proven.claimed_reported_at).toEqual(reported.claimed_reported_at);
    await expectCustodyProven();
  });

  it('behavior: create, cancel, cancelled webhook, refund proven on chain (rule 8)', async () => {
    const id = await create(reference('cancel'), '3');
    await waitLinkSent(id);
    await cancelPayout(deps, id);
    const kinds = await kindsOnce(id, 'claim_link.refunded');
    expect(kinds).toEqual(
      expect.arrayContaining(['claim_link.funded', 'claim_link.cancelled', 'claim_link.refunded']),
    );
    expect(await linesOf(id, 'claim_link.refunded')).toEqual([
      'assets:custody 3000000',
      'assets:refund_receivable -3000000',
    ]);
    const webhook = await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ refund_tx_hash: string | null; refunded_at: Date | null }>(
        sql`select refund_tx_hash, refunded_at from payouts where claim_link_id = ${id}`,
      );
      return rows[0]?.refund_tx_hash && rows[0].refunded_at ? rows[0] : undefined;
    });
    expect(webhook.refund_tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    await expectCustodyProven();
  });

  it('behavior: a create that times out is retried with the same reference_id and pays once', async () => {
    const ref = reference('timeout');
    const before = await chain.balanceOf('USDT', await chain.wallet('custody:biz_1'));
    const quick = pipeline.sandbox.client('st_a', {
      timeouts: { claimLinkCreateMs: 1500 },
      retry: { maxAttempts: 1 },
    });
    const plain = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 1 } });
    let calls = 0;
    clientOverride = {
      ...plain,
      createClaimLinkAutoPayout: async (request) => {
        calls++;
        if (calls > 1) return plain.createClaimLinkAutoPayout(request);
        // The funding transfer waits for a block that does not come: the answer outlives the timeout.
        await rpc('evm_setAutomine', [false]);
        try {
          return await quick.createClaimLinkAutoPayout(request);
        } finally {
          await rpc('evm_setAutomine', [true]);
          await mine(1);
        }
      },
    };
    let id: string;
    try {
      const { payout, idempotentHit } = await createPayout(deps, {
        storeId: 'st_a',
        amount: '4',
        coin: 'USDT',
        chain: chain.chainId,
        referenceId: ref,
      });
      expect(idempotentHit).toBe(true);
      id = payout.claimLinkId!;
    } finally {
      clientOverride = null;
    }
    expect(calls).toBe(2);
    expect(await chain.balanceOf('USDT', await chain.wallet('custody:biz_1'))).toBe(
      before - 4_000_000n - FEE,
    );
    // The answer that carried the funding hash was lost: the funding transfer is matched by amount.
    expect(await kindsOnce(id, 'claim_link.funding_fee')).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
    ]);
    await expectCustodyProven();
  });

  it('behavior: 50103 signer_error is retried with the same reference_id and funds once', async () => {
    const before = await chain.balanceOf('USDT', await chain.wallet('custody:biz_1'));
    await pipeline.sandbox.control('/_sandbox/claim_links/fail_next', {
      reason_code: 'signer_error',
      count: 2,
    });
    const id = await create(reference('signer'), '1.5');
    expect(await chain.balanceOf('USDT', await chain.wallet('custody:biz_1'))).toBe(
      before - 1_500_000n - FEE,
    );
    const { rows } = await pipeline.db.execute<{ attempts: number }>(
      sql`select attempts from payouts where claim_link_id = ${id}`,
    );
    expect(rows[0]?.attempts).toBe(3);
    expect(await kindsOnce(id, 'claim_link.funding_fee')).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
    ]);
    await expectCustodyProven();
  });
  it('behavior: a payout is in flight until its funding is final: the custody proof adds it back, never fails', async () => {
    await expectCustodyProven();
    const id = await create(reference('inflight'), '2.5');
    const { rows } = await pipeline.db.execute<{ funding_tx_hash: string }>(
      sql`select funding_tx_hash from payouts where claim_link_id = ${id}`,
    );
    const receipt = await rpc<{ blockNumber: string }>('eth_getTransactionReceipt', [
      rows[0]!.funding_tx_hash,
    ]);
    const fundingBlock = BigInt(receipt.blockNumber);
    // Rule 5 booked the amount out of custody when the service answered; the chain moves it at the
    // funding block, which is above the proof block until it is final.
    const proofs = await proveBalances({ db: pipeline.db, config: pipeline.config, rpcs });
    const custody = proofs.find((p) => p.role === 'custody' && p.symbol === 'USDT')!;
    // Nothing mines two blocks on top of the funding meanwhile (finality is 2 deep): not final yet.
    expect(custody.blockNumber!).toBeLessThan(fundingBlock);
    expect(custody.ok, custody.error ?? undefined).toBe(true);
    expect(custody.inFlight).toBe(2_500_000n);
    expect(custody.ledgerBalance).toBe(custody.chainBalance);
    await kindsOnce(id, 'claim_link.funding_fee');
    await expectCustodyProven();
  });

  // Last: the sandbox clock stays 14 days ahead afterwards.
  it('behavior: 14 days on the sandbox clock: the link expires and its refund is matched', async () => {
    const id = await create(reference('expire'), '2');
    await waitLinkSent(id);
    await kindsOnce(id, 'claim_link.funding_fee');
    await pipeline.sandbox.control('/_sandbox/clock/advance', { seconds: 14 * 86_400 + 60 });
    const kinds = await kindsOnce(id, 'claim_link.refunded');
    expect(kinds).toEqual(expect.arrayContaining(['claim_link.expired', 'claim_link.refunded']));
    expect(kinds).not.toContain('claim_link.cancelled');
    await expectCustodyProven();
  });
});
