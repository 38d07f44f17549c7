import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { applyChainTransfers } from '../../../src/chain/applyChainTransfers.ts';
import { createManualClock } from '../../../src/clock.ts';
import { balances, trialBalance } from '../../../src/ledger/balances.ts';
import { CHAIN_ID, createIndexerKit } from './indexerKit.ts';

/**
 * One transaction with several Transfer logs into the merchant wallet: a payer settling two
 * intents in one batch transaction, or paying the wallet twice. Each intent is proven by the log
 * of its own amount, and a log that proves nothing is booked (rule 9) instead of waiting for ever.
 * The transfers are stored rows, as the indexer leaves them (the matcher reads only the database).
 */
const kit = await createIndexerKit('batch_payments');
const clock = createManualClock(new Date());
const GRACE = 60_000;
const applyDeps = kit.applyDeps(clock, GRACE);
const merchant = kit.merchant.toLowerCase();
let seq = 0;

function confirmedIntent(
  txHash: string,
  coins: string,
  options: { token?: 'USDT' | 'USDC'; net?: string } = {},
) {
  return kit.confirmedIntent(txHash, { coins, ...options, observedAt: clock.now() });
}

type Log = bigint | { value: bigint; token?: 'USDT' | 'USDC'; to?: string };

/** Final Transfer logs of one transaction (into the merchant wallet in USDT unless said), in log order. */
async function storeLogs(txHash: string, logs: Log[]): Promise<void> {
  const block = 1_000 + seq++;
  for (const [logIndex, log] of logs.entries()) {
    const { value, token = 'USDT', to = merchant } = typeof log === 'bigint' ? { value: log } : log;
    await kit.db.db.execute(sql`
      insert into chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token,
                                   from_address, to_address, value, state, source, final_at)
      values (${CHAIN_ID}, ${txHash}, ${logIndex}, ${block}, ${`0x${block.toString(16).padStart(64, '0')}`}, now(),
              ${kit.chain.tokens[token].address.toLowerCase()}, ${`0x${'77'.repeat(20)}`}, ${to}, ${value.toString()},
              'final', 'logs', now())`);
  }
}

function txHashOf(n: number): string {
  return `0x${n.toString(16).padStart(64, 'e')}`;
}

async function matched(txHash: string) {
  const { rows } = await kit.db.db.execute<{
    log_index: number;
    matched_as: string | null;
    matched_ref: string | null;
  }>(
    sql`select log_index, matched_as, matched_ref from chain_transfers where tx_hash = ${txHash} order by log_index`,
  );
  return rows;
}

async function openFindings(): Promise<string[]> {
  const { rows } = await kit.db.db.execute<{ kind: string }>(
    sql`select kind from findings where resolved_at is null order by kind`,
  );
  return rows.map((r) => r.kind);
}

async function usdt(kind: string): Promise<bigint> {
  let sum = 0n;
  for (const b of await balances(kit.db.db, { storeId: 'st_a' })) {
    if (b.symbol === 'USDT' && b.code.startsWith(`${kind}:`)) sum += b.balance;
  }
  return sum;
}

describe('one transaction, several transfers into the merchant wallet', () => {
  it.each([
    ['the matcher (the transfers are final after the confirmations)', 'matcher'],
    ['the confirmations (the transfers were final before)', 'intents'],
  ])(
    'behavior: two intents paid by one transaction are each proven by the log of their own amount, proven by %s',
    async (_name, last) => {
      const hash = txHashOf(seq++);
      const walletBefore = await usdt('assets:wallet');
      // The smaller payment's log comes first: taking the first log would prove the wrong intent.
      const logs = [10_000_000n, 25_000_000n];
      if (last === 'intents') await storeLogs(hash, logs);
      const big = await confirmedIntent(hash, '25');
      const small = await confirmedIntent(hash, '10');
      if (last === 'matcher') await storeLogs(hash, logs);
      clock.set(new Date());
      // (The matcher proves both intents while on the first log: it may count one row applied.)
      expect(await applyChainTransfers(applyDeps, CHAIN_ID)).toMatchObject({ deferred: 0, unwound: 0 });
      expect(await matched(hash)).toEqual([
        { log_index: 0, matched_as: 'payment_proof', matched_ref: small },
        { log_index: 1, matched_as: 'payment_proof', matched_ref: big },
      ]);
      expect(await usdt('assets:in_transit')).toBe(0n);
      expect(await usdt('assets:wallet')).toBe(walletBefore + 35_000_000n);
      expect(await openFindings()).toEqual([]);
      // Nothing more to do, from either side.
      expect(await applyChainTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 0, deferred: 0, unwound: 0 });
    },
  );

  it('behavior: a second transfer in the paying transaction proves nothing: it waits the grace, then goes to suspense', async () => {
    const hash = txHashOf(seq++);
    const paid = await confirmedIntent(hash, '25');
    await storeLogs(hash, [25_000_000n, 3_000_000n]);
    const walletBefore = await usdt('assets:wallet');
    clock.set(new Date());
    expect(await applyChainTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 1, deferred: 1, unwound: 0 });
    clock.advance(2 * GRACE);
    expect(await applyChainTransfers(applyDeps, CHAIN_ID)).toEqual({ applied: 1, deferred: 0, unwound: 0 });
    expect(await matched(hash)).toEqual([
      { log_index: 0, matched_as: 'payment_proof', matched_ref: paid },
      { log_index: 1, matched_as: 'transfer_in_unmatched', matched_ref: null },
    ]);
    expect(await usdt('assets:in_transit')).toBe(0n);
    expect(await usdt('assets:suspense')).toBe(-3_000_000n);
    expect(await usdt('assets:wallet')).toBe(walletBefore + 28_000_000n);
    expect(await openFindings()).toEqual(['unmatched_transfer_in']);
    for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
  });

  it('behavior: a USDT and a USDC invoice of the same amount in one transaction each take the log of their own token', async () => {
    const hash = txHashOf(seq++);
    await storeLogs(hash, [
      { value: 10_000_000n, token: 'USDC' },
      { value: 10_000_000n, token: 'USDT' },
    ]);
    const usdtIntent = await confirmedIntent(hash, '10');
    const usdcIntent = await confirmedIntent(hash, '10', { token: 'USDC' });
    expect(await matched(hash)).toEqual([
      { log_index: 0, matched_as: 'payment_proof', matched_ref: usdcIntent },
      { log_index: 1, matched_as: 'payment_proof', matched_ref: usdtIntent },
    ]);
  });

  it("behavior: while rule 1 waits for the chain (reported net != P - F), the proof takes the log of P - F, not the other intent's", async () => {
    const hash = txHashOf(seq++);
    await storeLogs(hash, [10_000_000n, 25_000_000n]);
    const reportedWrong = await confirmedIntent(hash, '25', { net: '24' });
    const plain = await confirmedIntent(hash, '10');
    expect(await matched(hash)).toEqual([
      { log_index: 0, matched_as: 'payment_proof', matched_ref: plain },
      { log_index: 1, matched_as: 'payment_proof', matched_ref: reportedWrong },
    ]);
    expect(await usdt('assets:in_transit')).toBe(0n);
  });

  it('behavior: the paying log held by a matcher at that moment: the intent side marks nothing else, and the proof comes once it is free', async () => {
    const hash = txHashOf(seq++);
    // A fee to someone else first, then the payment: the service's own split.
    await storeLogs(hash, [{ value: 1_000_000n, to: `0x${'55'.repeat(20)}` }, 25_000_000n]);
    const locker = await kit.db.pool.connect();
    let id: string;
    try {
      await locker.query('begin');
      await locker.query('select 1 from chain_transfers where tx_hash = $1 and log_index = 1 for update', [
        hash,
      ]);
      id = await confirmedIntent(hash, '25');
      expect(await matched(hash)).toEqual([
        { log_index: 0, matched_as: null, matched_ref: null },
        { log_index: 1, matched_as: null, matched_ref: null },
      ]);
    } finally {
      await locker.query('rollback');
      locker.release();
    }
    clock.set(new Date());
    await applyChainTransfers(applyDeps, CHAIN_ID);
    expect(await matched(hash)).toEqual([
      { log_index: 0, matched_as: 'ignored', matched_ref: null },
      { log_index: 1, matched_as: 'payment_proof', matched_ref: id },
    ]);
    expect(await usdt('assets:in_transit')).toBe(0n);
  });
});
