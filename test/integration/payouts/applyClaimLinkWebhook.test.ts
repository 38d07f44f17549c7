import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { createManualClock } from '../../../src/clock.ts';
import type { DomainContext } from '../../../src/context/domainContext.ts';
import { REFUND_WEBHOOK_WAIT } from '../../../src/inbox/claimLinkWebhook.ts';
import { processInboxWebhook } from '../../../src/inbox/processInboxWebhook.ts';
import { trialBalance } from '../../../src/ledger/balances.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { claimLinkFunded } from '../../../src/ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { markCancelled } from '../../../src/payouts/closeLink.ts';
import { matchClaimLinks } from '../../../src/recon/checks/matching.ts';
import { createFoundTable } from '../../../src/recon/foundFindings.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { captureLogger } from '../../helpers/captureLogger.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * The claim-link cancelled webhook as the spec promises it: a body with refund_tx_hash and nothing
 * else (no event name, no claim_link_id, no reference_id). Links funded and refunded with real
 * transfers on anvil, the real indexer and matcher; the webhook is processed as the worker does.
 * It is the `cancelled` event, its link is found by the refund transaction (indexed from the pool
 * back to custody, or recorded on the payout once final), it waits while the chain side has not
 * seen that refund, and fails with a finding once the wait is over.
 */
const kit = await createIndexerKit('claim_link_webhook');
const indexer = kit.deps();
const clock = createManualClock(new Date());
const applyDeps = kit.applyDeps(clock, 60_000);
const db = kit.db.db;
const USDT = kit.registry.token(CHAIN_ID, kit.chain.tokens.USDT.address)!;
const FEE = 500_000n;
const HOUR_MS = 3_600_000;
const feeWallet = await kit.chain.wallet('fees:31337');
const payments: DomainContext = {
  db,
  chains: kit.registry,
  stores: kit.stores,
  accounts: kit.accounts,
  client: () => {
    throw new Error('claim-link webhooks need no service call');
  },
  clock,
  logger: captureLogger().logger,
  encryptionKey: Buffer.alloc(32),
};

await kit.chain.mint('USDT', kit.custody, 1_000_000_000n);

/** Mines past the depth, indexes until nothing stored is pending, and applies. */
async function settle(): Promise<void> {
  await kit.raw('anvil_mine', ['0x3']);
  for (let i = 0; i < 5; i++) {
    await indexChainPass(indexer, CHAIN_ID);
    if ((await kit.rows()).every((r) => r.state !== 'pending')) break;
  }
  await settleTransfers(applyDeps, CHAIN_ID);
}

/**
 * A created payout of `amount` base units with its link sent, funded on chain with amount + FEE,
 * its fee swept by the service, all final and booked: the pool is learnt. Returns the pool's
 * label and the sweep's transaction.
 */
async function fundedLink(linkId: string, amount: bigint) {
  const pool = `pool:${linkId}`;
  const funding = await kit.chain.transfer(
    'USDT',
    'custody:biz_1',
    await kit.chain.wallet(pool),
    amount + FEE,
  );
  const decimal = formatDecimalAmount(amount, USDT.decimals);
  await db.execute(sql`
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
  await postEntry(db, funded.entry!, { accounts: kit.accounts });
  await settle();
  const sweep = await kit.chain.transfer('USDT', pool, feeWallet, FEE);
  await settle();
  const { rows } = await db.execute<{ pool_address: string | null }>(
    sql`select pool_address from payouts where claim_link_id = ${linkId}`,
  );
  expect(rows[0]?.pool_address).toBe((await kit.chain.wallet(pool)).toLowerCase());
  return { pool, sweepTxHash: sweep.txHash };
}

/** Stores a signed webhook's body as intake does, then processes it as the worker does. */
async function deliver(webhookId: string, body: unknown) {
  await db.execute(sql`
    insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body)
    values (${webhookId}, 'st_a', 'claim-links', 'received', '{}'::jsonb, ${Buffer.from(JSON.stringify(body))})`);
  return processInboxWebhook(payments, webhookId);
}

async function inboxRow(webhookId: string) {
  const { rows } = await db.execute<{
    status: string;
    attempts: number;
    error: string | null;
    ref_id: string | null;
  }>(sql`select status, attempts, error, ref_id from webhook_inbox where webhook_id = ${webhookId}`);
  return rows[0];
}

async function payout(linkId: string) {
  const { rows } = await db.execute<{
    link_status: string;
    cancelled_at: Date | null;
    refund_tx_hash: string | null;
    refunded_at: Date | null;
  }>(sql`
    select link_status, cancelled_at, refund_tx_hash, refunded_at from payouts where claim_link_id = ${linkId}`);
  return rows[0];
}

async function kinds(linkId: string): Promise<string[]> {
  const { rows } = await db.execute<{ kind: string }>(
    sql`select kind from ledger_entries where ref_id = ${linkId} order by id`,
  );
  return rows.map((r) => r.kind);
}

async function findings(refId: string): Promise<Array<{ kind: string; resolved: boolean }>> {
  const { rows } = await db.execute<{ kind: string; resolved: boolean }>(sql`
    select kind, resolved_at is not null as resolved from findings where ref_id = ${refId} order by id`);
  return rows;
}

/** Whether reconciliation's claim-link matching finds the link's webhook missing, two hours on. */
async function missingWebhook(linkId: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    await createFoundTable(tx);
    await matchClaimLinks({
      tx,
      storeId: 'st_a',
      now: new Date(clock.now().getTime() + 2 * HOUR_MS),
      settings: {
        inTransitWindowMs: HOUR_MS,
        webhookWindowMs: HOUR_MS,
        stuckMs: HOUR_MS,
        amountTolerance: 0n,
      },
      chains: kit.registry,
    });
    const { rows } = await tx.execute(sql`
      select 1 from recon_found where kind = 'missing_webhook' and ref_type = 'claim_link' and ref_id = ${linkId}`);
    return rows.length > 0;
  });
}

describe('the claim-link cancelled webhook with refund_tx_hash only', () => {
  it('behavior: it waits until the indexer has read the refund, then applies to the pool’s link; recon finds its webhook', async () => {
    const linkId = 'cl_hash_only_indexed';
    const { pool } = await fundedLink(linkId, 2_000_000n);
    await db.transaction((tx) => markCancelled(tx, payments, `po_${linkId}`, 'api'));
    const refund = await kit.chain.transfer('USDT', pool, kit.custody, 2_000_000n);
    const webhookId = 'wh_hash_only_indexed';

    // The service's webhook beats our indexer: the refund is not known yet. Before: an event-less
    // body was `unhandled_webhook_event`, processed and never applied.
    const early = await deliver(webhookId, { refund_tx_hash: refund.txHash });
    expect(early).toMatchObject({
      kind: 'waiting',
      reason: expect.stringContaining(refund.txHash.toLowerCase()),
    });
    expect(await inboxRow(webhookId)).toMatchObject({ status: 'received', attempts: 1, ref_id: null });
    expect(await findings(webhookId)).toEqual([]);

    // The indexer reads the refund (not final yet): the next attempt (the inbox sweeper's) applies it.
    await indexChainPass(indexer, CHAIN_ID);
    const stored = (await kit.rows()).find((r) => r.tx_hash === refund.txHash.toLowerCase());
    expect(stored?.state).toBe('pending');
    expect(await processInboxWebhook(payments, webhookId)).toEqual({
      kind: 'claim_link_applied',
      claimLinkId: linkId,
      storeId: 'st_a',
    });
    expect(await inboxRow(webhookId)).toMatchObject({
      status: 'processed',
      attempts: 2,
      error: null,
      ref_id: linkId,
    });
    expect(await payout(linkId)).toMatchObject({
      link_status: 'cancelled',
      refund_tx_hash: refund.txHash.toLowerCase(),
      refunded_at: null,
    });
    expect(await processInboxWebhook(payments, webhookId)).toEqual({ kind: 'already_done' });

    // The chain side books the refund once final (rule 8); one close, one refund.
    await settle();
    expect(await kinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.cancelled',
      'claim_link.refunded',
    ]);
    expect((await payout(linkId))?.refunded_at).not.toBeNull();
    expect(await missingWebhook(linkId)).toBe(false);
    expect(await findings(linkId)).toEqual([]);
  });

  it('behavior: after the refund is booked it is found by the payout’s refund_tx_hash, and the missing_webhook goes', async () => {
    const linkId = 'cl_hash_only_booked';
    const { pool } = await fundedLink(linkId, 3_000_000n);
    // Cancelled at the service (dashboard): our books learn it from the refund.
    const refund = await kit.chain.transfer('USDT', pool, kit.custody, 3_000_000n);
    await settle();
    expect(await payout(linkId)).toMatchObject({
      link_status: 'cancelled',
      refund_tx_hash: refund.txHash.toLowerCase(),
    });
    expect(await missingWebhook(linkId)).toBe(true);

    const outcome = await deliver('wh_hash_only_booked', {
      refund_tx_hash: refund.txHash.toUpperCase().replace('0X', '0x'),
    });
    expect(outcome).toEqual({ kind: 'claim_link_applied', claimLinkId: linkId, storeId: 'st_a' });
    expect(await inboxRow('wh_hash_only_booked')).toMatchObject({ status: 'processed', ref_id: linkId });
    expect(await kinds(linkId)).toEqual([
      'claim_link.funded',
      'claim_link.funding_fee',
      'claim_link.cancelled',
      'claim_link.refunded',
    ]);
    expect(await missingWebhook(linkId)).toBe(false);
    expect(await findings(linkId)).toEqual([{ kind: 'cancelled_outside_stablebooks', resolved: false }]);
  });

  it('error: a hash that is no refund (the fee sweep to the service) waits, then fails with a finding once the wait is over', async () => {
    const linkId = 'cl_hash_only_sweep';
    const { sweepTxHash } = await fundedLink(linkId, 1_000_000n);
    const byTime = 'wh_hash_only_sweep_time';
    expect((await deliver(byTime, { refund_tx_hash: sweepTxHash })).kind).toBe('waiting');
    // Received longer ago than the wait (the database's clock): it fails for a person.
    await db.execute(sql`
      update webhook_inbox set received_at = now() - ${REFUND_WEBHOOK_WAIT.ms + 60_000} * interval '1 millisecond'
      where webhook_id = ${byTime}`);
    expect(await processInboxWebhook(payments, byTime)).toMatchObject({
      kind: 'unusable',
      reason: expect.stringMatching(/no claim link of store st_a is known by refund_tx_hash/),
    });
    expect(await inboxRow(byTime)).toMatchObject({ status: 'failed', attempts: 2 });
    expect(await findings(byTime)).toEqual([{ kind: 'webhook_for_unknown_claim_link', resolved: false }]);

    // Or after as many attempts.
    const byAttempts = 'wh_hash_only_sweep_attempts';
    expect((await deliver(byAttempts, { refund_tx_hash: sweepTxHash })).kind).toBe('waiting');
    await db.execute(sql`
      update webhook_inbox set attempts = ${REFUND_WEBHOOK_WAIT.attempts - 1} where webhook_id = ${byAttempts}`);
    expect((await processInboxWebhook(payments, byAttempts)).kind).toBe('unusable');
    expect(await inboxRow(byAttempts)).toMatchObject({ status: 'failed' });
    expect(await findings(byAttempts)).toEqual([{ kind: 'webhook_for_unknown_claim_link', resolved: false }]);
    expect(await payout(linkId)).toMatchObject({
      link_status: 'link_sent',
      cancelled_at: null,
      refund_tx_hash: null,
    });
  });

  it('behavior: a refund paid in two pieces: a webhook naming either piece agrees; another transaction is a mismatch', async () => {
    const linkId = 'cl_refund_pieces';
    const { pool, sweepTxHash } = await fundedLink(linkId, 4_000_000n);
    await db.transaction((tx) => markCancelled(tx, payments, `po_${linkId}`, 'api'));
    const first = await kit.chain.transfer('USDT', pool, kit.custody, 1_500_000n);
    await settle();
    const last = await kit.chain.transfer('USDT', pool, kit.custody, 2_500_000n);
    await settle();
    // The piece that completed the refund is the one recorded.
    expect(await payout(linkId)).toMatchObject({ refund_tx_hash: last.txHash.toLowerCase() });
    expect((await payout(linkId))?.refunded_at).not.toBeNull();

    // The service names the first piece. Before: refund_tx_hash_mismatch, open with nothing wrong.
    expect(
      await deliver('wh_refund_piece_first', { claim_link_id: linkId, refund_tx_hash: first.txHash }),
    ).toEqual({ kind: 'claim_link_applied', claimLinkId: linkId, storeId: 'st_a' });
    expect(await findings(linkId)).toEqual([]);

    // A transaction that is no refund of the link still disagrees.
    await deliver('wh_refund_piece_sweep', { claim_link_id: linkId, refund_tx_hash: sweepTxHash });
    expect(await findings(linkId)).toEqual([{ kind: 'refund_tx_hash_mismatch', resolved: false }]);
    expect(await payout(linkId)).toMatchObject({ refund_tx_hash: last.txHash.toLowerCase() });
  });

  it('behavior: the books stay balanced', async () => {
    for (const line of await trialBalance(db)) expect(line.net, line.asset).toBe(0n);
  });
});
