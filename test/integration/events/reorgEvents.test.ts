import { sql } from 'drizzle-orm';
import { encodeFunctionData, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { createManualClock } from '../../../src/clock.ts';
import { parseDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { sandboxTokenAbi } from '../../../src/sandbox/chain/contracts/sandboxTokenArtifact.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * Outbound events a consumer can sum (README, "Outbound events"): on a real anvil, a proven
 * payment whose block is replaced and whose transaction is mined again at another log index. The
 * ledger proves, reverses and proves again (the wallet +25 once); a consumer that applies the
 * events deduped by id, in any order, must end with the same +25.
 */
const kit = await createIndexerKit('reorg_events');
const clock = createManualClock(new Date());
const deps = kit.deps();
const applyDeps = kit.applyDeps(clock, 60_000);
/** anvil's first pre-funded account: the sandbox chain deploys (and owns) the tokens with it. */
const DEPLOYER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

type OutboxRow = { event_id: string; type: string; payload: Record<string, unknown> };

async function paymentEvents(intentId: string): Promise<OutboxRow[]> {
  const { rows } = await kit.db.db.execute<OutboxRow>(sql`
    select event_id, type, payload from event_outbox
    where payload->>'intent_id' = ${intentId} and type like 'payment.%' order by id`);
  return rows;
}

/** A consumer's fold: the events deduped by id, each `.reversed` taking back its amount. */
function fold(events: OutboxRow[], type: 'payment.proven' | 'payment.booked', field: string): bigint {
  const seen = new Map(events.map((e) => [e.event_id, e]));
  let units = 0n;
  for (const e of seen.values()) {
    const amount = parseDecimalAmount(String(e.payload[field]), 6);
    if (e.type === type) units += amount;
    if (e.type === `${type}.reversed`) units -= amount;
  }
  return units;
}

/** What the ledger says was proven for the intent: its wallet debits by rule 2, net of rule 3. */
async function ledgerProven(intentId: string): Promise<bigint> {
  const { rows } = await kit.db.db.execute<{ units: string }>(sql`
    select coalesce(sum(p.amount), 0)::text as units from ledger_entries e
    join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
    where e.ref_id = ${intentId} and e.kind in ('chain.payment_proven', 'chain.payment_proven.reversal')
      and a.code like 'assets:wallet:%'`);
  return BigInt(rows[0]!.units);
}

async function settle(): Promise<void> {
  clock.set(new Date());
  await settleTransfers(applyDeps, CHAIN_ID);
}

describe('outbound events across a reorg', () => {
  it('behavior: a proven payment re-mined at another log index is announced proven, reversed, proven again: it sums to the ledger', async () => {
    const buyer = await kit.chain.wallet('buyer:reorg');
    await kit.chain.mint('USDT', buyer, 25_000_000n);
    const paid = await kit.chain.transfer('USDT', 'buyer:reorg', kit.merchant, 25_000_000n);
    const intentId = await kit.confirmedIntent(paid.txHash);
    await kit.indexUntilFinal(deps);
    await settle();
    expect(await ledgerProven(intentId)).toBe(25_000_000n);

    // The payment's block is replaced; the same signed transaction is mined again one block later,
    // behind another transfer of the token, so its log has another index.
    const raw = (await kit.raw('eth_getRawTransactionByHash', [paid.txHash])) as Hex;
    const head = await kit.head();
    await kit.raw('evm_setAutomine', [false]);
    try {
      await kit.raw('anvil_reorg', [Number(head - paid.blockNumber + 1n), []]);
      // A mint by the token's deployer (anvil's first account, unlocked) with a higher tip, so the
      // block orders it before the payment.
      await kit.raw('eth_sendTransaction', [
        {
          from: DEPLOYER,
          to: kit.chain.tokens.USDT.address,
          data: encodeFunctionData({
            abi: sandboxTokenAbi,
            functionName: 'mint',
            args: [await kit.chain.wallet('stranger:reorg'), 1_000_000n],
          }),
          gas: '0x30d40',
          maxPriorityFeePerGas: '0x174876e800',
          maxFeePerGas: '0x2540be4000',
        },
      ]);
      await kit.raw('eth_sendRawTransaction', [raw]);
      await kit.raw('evm_mine', []);
    } finally {
      await kit.raw('evm_setAutomine', [true]);
    }
    const rows = (await kit.rows()).filter((r) => r.tx_hash === paid.txHash.toLowerCase());
    await indexChainPass(deps, CHAIN_ID);
    await kit.indexUntilFinal(deps);
    await settle();
    const now = (await kit.rows()).filter((r) => r.tx_hash === paid.txHash.toLowerCase());
    // Precondition: the transaction's log moved (else this is not the shape under test).
    expect(new Set(now.map((r) => r.log_index)).size, JSON.stringify(now)).toBe(2);
    expect(rows.length).toBe(1);

    // The ledger: proven, reversed, proven again.
    expect(await ledgerProven(intentId)).toBe(25_000_000n);
    const events = await paymentEvents(intentId);
    expect(events.map((e) => e.event_id)).toEqual([
      `payment.booked:${intentId}`,
      `payment.proven:${intentId}`,
      `payment.proven.reversed:${intentId}`,
      `payment.proven:${intentId}:r1`,
    ]);
    expect(events[2]!.payload).toMatchObject({ reverses: `payment.proven:${intentId}`, amount: '25' });
    expect(fold(events, 'payment.proven', 'amount')).toBe(await ledgerProven(intentId));
    // In any order, and with every event delivered twice, the fold is the same.
    expect(fold([...events, ...events].reverse(), 'payment.proven', 'amount')).toBe(25_000_000n);
  });
});
