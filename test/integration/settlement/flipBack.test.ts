import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { loadReceiptRows, recheckReceiptRows } from '../../../src/chain/receiptRecheck.ts';
import { receiptTransfers, storeReceiptTransfers } from '../../../src/chain/receiptTransfers.ts';
import { createManualClock } from '../../../src/clock.ts';
import { balances, trialBalance } from '../../../src/ledger/balances.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { startRpcProxy } from '../../helpers/rpcProxy.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * A chain that comes back to a block whose transfers were orphaned: here the only RPC URL lies
 * about two block hashes for one pass (a false reorg), then tells the truth again. The same
 * inclusion (same block hash) must count again: revived, not left orphaned for ever (which the
 * unique key of the inclusion used to do), and booked again under keys of its own when what it
 * had booked was reversed in between.
 */
const kit = await createIndexerKit('flip_back');
const honest = kit.deps();
const clock = createManualClock(new Date());
const applyDeps = kit.applyDeps(clock, 0);
/** The matcher, at the wall clock's now (the indexer stamps final_at with it): no intent will come, rule 9. */
function apply() {
  clock.set(new Date());
  return settleTransfers(applyDeps, CHAIN_ID);
}

await kit.chain.mint('USDC', await kit.chain.wallet('buyer:fb'), 1_000_000n);
await kit.chain.mine(3);

interface RowState {
  state: string;
  block_hash: string;
  revival: number;
  applied: boolean;
  matched_as: string | null;
}

async function rowsOf(txHash: string): Promise<RowState[]> {
  const { rows } = await kit.db.db.execute<RowState & Record<string, unknown>>(sql`
    select state, block_hash, revival, applied_at is not null as applied, matched_as
    from chain_transfers where tx_hash = ${txHash} order by id`);
  return rows;
}

/** One pass through a URL that reports other hashes for the block `at` and the cursor's block. */
async function falseReorgAt(at: bigint): Promise<number> {
  const cursor = await kit.cursor();
  const proxy = await startRpcProxy(kit.anvil.rpcUrl);
  try {
    proxy.set({
      fakeHashes: new Map([
        [at, `0x${'ab'.repeat(32)}`],
        [BigInt(cursor!.block_number), `0x${'cd'.repeat(32)}`],
      ]),
    });
    // maxRanges 0: the pass only checks the stored blocks' hashes.
    const outcome = await indexChainPass(kit.deps([proxy.url]), CHAIN_ID, { maxRanges: 0 });
    return outcome.orphaned;
  } finally {
    await proxy.close();
  }
}

/** Honest passes until the transaction's newest row is final (the chain is mined past the depth). */
async function indexUntilFinal(txHash: string): Promise<void> {
  await kit.chain.mine(3);
  for (let i = 0; i < 5; i++) {
    await indexChainPass(honest, CHAIN_ID);
    if ((await rowsOf(txHash)).at(-1)?.state === 'final') return;
  }
  throw new Error(`transfer ${txHash} not final`);
}

describe('transfer indexer: the chain returns to an orphaned block', () => {
  it('behavior: a transfer orphaned before it was booked is revived in place and booked once', async () => {
    const paid = await kit.chain.transfer('USDC', 'buyer:fb', kit.merchant, 7n);
    await indexChainPass(honest, CHAIN_ID);
    expect((await rowsOf(paid.txHash)).map((r) => r.state)).toEqual(['pending']);

    expect(await falseReorgAt(paid.blockNumber)).toBe(1);
    expect((await rowsOf(paid.txHash)).map((r) => r.state)).toEqual(['orphaned']);

    // The truth again: the same block hash, so the same row, pending and then final, not orphaned.
    await indexUntilFinal(paid.txHash);
    expect(await rowsOf(paid.txHash)).toEqual([
      { state: 'final', block_hash: paid.blockHash, revival: 0, applied: false, matched_as: null },
    ]);
    expect(await apply()).toMatchObject({ applied: 1, unwound: 0 });
    const entries = await kit.db.db.execute<{ idempotency_key: string }>(sql`
      select idempotency_key from ledger_entries where metadata->>'tx_hash' = ${paid.txHash} order by id`);
    const inclusion = `${CHAIN_ID}:${paid.txHash}:${paid.logIndex}:${paid.blockHash}`;
    expect(entries.rows.map((r) => r.idempotency_key)).toEqual([`chain:unmatched_in:${inclusion}`]);
  });

  it('behavior: a booked transfer orphaned and unwound, then back in its block, is booked again under new keys', async () => {
    const paid = await kit.chain.transfer('USDC', 'buyer:fb', kit.merchant, 11n);
    await indexUntilFinal(paid.txHash);
    expect(await apply()).toMatchObject({ applied: 1 });
    const suspenseBefore = await suspense();

    expect(await falseReorgAt(paid.blockNumber)).toBe(1);
    expect(await apply()).toMatchObject({ unwound: 1 });
    expect(await suspense()).toBe(suspenseBefore + 11n);

    // Read again (already past the finality depth): the same row, unbooked, its revival counted.
    await indexChainPass(honest, CHAIN_ID);
    expect(await rowsOf(paid.txHash)).toEqual([
      { state: 'final', block_hash: paid.blockHash, revival: 1, applied: false, matched_as: null },
    ]);
    expect(await apply()).toMatchObject({ applied: 1, unwound: 0 });
    // Idempotent: nothing more to do, and a pass that reads the block again revives nothing.
    await indexChainPass(honest, CHAIN_ID);
    expect(await apply()).toEqual({ applied: 0, deferred: 0, unwound: 0 });
    expect((await rowsOf(paid.txHash)).map((r) => [r.state, r.revival, r.matched_as])).toEqual([
      ['final', 1, 'transfer_in_unmatched'],
    ]);

    const inclusion = `${CHAIN_ID}:${paid.txHash}:${paid.logIndex}:${paid.blockHash}`;
    const entries = await kit.db.db.execute<{ idempotency_key: string; reverses: boolean }>(sql`
      select idempotency_key, reverses_entry_id is not null as reverses from ledger_entries
      where metadata->>'tx_hash' = ${paid.txHash} or reverses_entry_id in (
        select id from ledger_entries where metadata->>'tx_hash' = ${paid.txHash})
      order by id`);
    expect(entries.rows).toEqual([
      { idempotency_key: `chain:unmatched_in:${inclusion}`, reverses: false },
      { idempotency_key: expect.any(String), reverses: true },
      { idempotency_key: `chain:unmatched_in:${inclusion}:r1`, reverses: false },
    ]);
    expect(await suspense()).toBe(suspenseBefore);
    for (const line of await trialBalance(kit.db.db)) expect(line.net, line.asset).toBe(0n);
  });

  it('behavior: a row from logs revived by a receipt becomes a receipt row, so it is checked by receipt before it is final', async () => {
    const paid = await kit.chain.transfer('USDC', 'buyer:fb', kit.merchant, 3n);
    await indexChainPass(honest, CHAIN_ID);
    expect(await falseReorgAt(paid.blockNumber)).toBe(1);
    // The verifier reads the receipt (of whatever node answers it) for a payment whose rows are all orphaned.
    const receipt = await receiptTransfers(honest.rpc, kit.registry, CHAIN_ID, paid.txHash);
    if (receipt.status !== 'success') throw new Error('expected a receipt');
    await storeReceiptTransfers(kit.db.db, receipt.transfers);
    const { rows } = await kit.db.db.execute<{ state: string; source: string }>(
      sql`select state, source from chain_transfers where tx_hash = ${paid.txHash}`,
    );
    expect(rows).toEqual([{ state: 'pending', source: 'receipt' }]);
  });

  it('behavior: a verified transaction orphaned with its block is revived by its receipt, which still shows that block', async () => {
    await indexChainPass(honest, CHAIN_ID);
    const stranger = await kit.chain.wallet('stranger:fb'); // no watched wallet: only a receipt knows it
    const sent = await kit.chain.transfer('USDC', 'buyer:fb', stranger, 5n);
    await kit.chain.mine(1);
    await indexChainPass(honest, CHAIN_ID);
    const receipt = await receiptTransfers(honest.rpc, kit.registry, CHAIN_ID, sent.txHash);
    if (receipt.status !== 'success') throw new Error('expected a receipt');
    await storeReceiptTransfers(kit.db.db, receipt.transfers);

    // The false reorg orphans the row (the lying URL's header disagrees with the receipt, so the
    // re-read right after it proves nothing); read through an honest URL, the receipt still names
    // that very block: the row is revived.
    expect(await falseReorgAt(sent.blockNumber)).toBe(1);
    const orphaned = await loadReceiptRows(kit.db.db, CHAIN_ID, sql`tx_hash = ${sent.txHash}`);
    expect(orphaned.map((r) => r.state)).toEqual(['orphaned']);
    const recheck = await recheckReceiptRows(
      { db: kit.db.db, rpc: honest.rpc, registry: kit.registry },
      orphaned,
      new Date(),
    );
    expect(recheck).toMatchObject({ insertedIds: [orphaned[0]?.id], orphanedIds: [], unavailable: 0 });
    expect(await rowsOf(sent.txHash)).toEqual([
      { state: 'pending', block_hash: sent.blockHash, revival: 0, applied: false, matched_as: null },
    ]);
    await indexUntilFinal(sent.txHash);
    expect((await rowsOf(sent.txHash)).map((r) => r.state)).toEqual(['final']);
  });
});

/** st_a's USDC suspense balance (credit-normal: more money waiting is a more negative balance). */
async function suspense(): Promise<bigint> {
  let sum = 0n;
  for (const b of await balances(kit.db.db, { storeId: 'st_a' })) {
    if (b.symbol === 'USDC' && b.code.startsWith('assets:suspense')) sum += b.balance;
  }
  return sum;
}
