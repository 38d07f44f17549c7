import { sql } from 'drizzle-orm';
import type { Db } from '../../src/db/database.ts';
import type { Token } from '../../src/ledger/accounts.ts';
import type { EntryDraft, RuleOutcome } from '../../src/ledger/entryDraft.ts';
import { postEntry, reverseEntry } from '../../src/ledger/postEntry.ts';
import type { ChainTransferFact } from '../../src/ledger/rules/chainTransferFact.ts';
import { paymentProven, unmatchedTransfer } from '../../src/ledger/rules/chainTransferRules.ts';
import { checkoutConfirmed, checkoutTerminalFailure } from '../../src/ledger/rules/checkoutRules.ts';
import {
  claimLinkCancelled,
  claimLinkClaimed,
  claimLinkFunded,
  claimLinkFundingProven,
  claimLinkRefunded,
} from '../../src/ledger/rules/claimLinkRules.ts';
import { CheckoutStatus } from '../../src/svc/models/checkoutStatus.ts';
import { USDC_BASE, USDT_BNB } from './tokens.ts';

/**
 * A ledger for the export tests, booked through the real posting rules and poster: store st_a on
 * Ethereum (USDT, 6 decimals) and BNB (USDT, 18 decimals: the same symbol on two chains, amounts
 * far above 2^53 base units), store st_b on Base (USDC). Entries of many kinds before, inside and
 * after the period [PERIOD_FROM, PERIOD_TO): confirmations (under- and overpaid), proofs, a
 * reorg's reversal, an intent cancelled after its proof (reversal and suspense), a claim link
 * funded, fee-proven and claimed, another funded, cancelled and refunded short, unmatched
 * transfers in and out, an entry at exactly PERIOD_FROM (in) and at exactly PERIOD_TO (out), and
 * a memo with quotes, a comma and a semicolon. The intents and a payout have rows of their own,
 * so the export can tag order and payout ids.
 */
export const USDT_ETH: Token = {
  chainId: 1,
  address: '0xdac17f958d2ee523a2206206994597c13d831ec7',
  symbol: 'USDT',
  decimals: 6,
};
export const PERIOD_FROM = new Date('2026-11-03T12:00:00Z');
export const PERIOD_TO = new Date('2026-11-07T00:00:00Z');
export const HOSTILE_MEMO = 'reorg said "undo", then; a comma, and a back\\slash';

const MERCHANT = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
const CUSTODY = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc';
const POOL = '0x90f79bf6eb2c4f870365e785982e1f101e93b906';
const BUYER = '0x15d34aaf54267db7d7c367839aaf71a00a2c6a65';
const RECIPIENT = '0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc';

let txSeq = 0;
function transfer(token: Token, from: string, to: string, amount: bigint, at: string): ChainTransferFact {
  txSeq++;
  const hex = txSeq.toString(16).padStart(64, '0');
  return {
    chainId: token.chainId,
    txHash: `0x${hex}`,
    logIndex: 0,
    blockNumber: BigInt(1000 + txSeq),
    blockHash: `0x${'b'.repeat(48)}${txSeq.toString(16).padStart(16, '0')}`,
    tokenAddress: token.address,
    from: from as `0x${string}`,
    to: to as `0x${string}`,
    amount,
    occurredAt: new Date(at),
  };
}

async function book(db: Db, outcome: RuleOutcome | { entry: EntryDraft | null }): Promise<bigint> {
  if (!outcome.entry) throw new Error('the rule booked nothing');
  return (await postEntry(db, outcome.entry)).id;
}

async function intentRow(db: Db, id: string, storeId: string, orderId: string): Promise<void> {
  await db.execute(sql`insert into checkout_intents (id, store_id, order_id, tracked_via)
                       values (${id}, ${storeId}, ${orderId}, 'test')`);
}

async function payoutRow(
  db: Db,
  id: string,
  storeId: string,
  token: Token,
  claimLinkId: string,
  amount: string,
) {
  await db.execute(sql`insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address,
                                            create_outcome, claim_link_id)
                       values (${id}, ${storeId}, ${`ref-${id}`}, ${amount}, 1, ${token.chainId}, ${token.address},
                               'created', ${claimLinkId})`);
}

const noFiat = { amountCents: null, currency: null, currencyRate: null };

export async function seedExportScenario(db: Db): Promise<void> {
  // Before the period.
  await intentRow(db, 'pi_eth_1', 'st_a', 'order-1001');
  const confirmed1 = await book(
    db,
    checkoutConfirmed({
      storeId: 'st_a',
      intentId: 'pi_eth_1',
      occurredAt: new Date('2026-11-01T10:00:00Z'),
      token: USDT_ETH,
      amountCoins: '100',
      actualPaidAmount: '99.5',
      serviceFeeAmount: '0.5',
      netIncomeAmount: '99',
      fiat: { amountCents: 10000n, currency: 1, currencyRate: '1' },
      txHash: `0x${'a1'.repeat(32)}`,
      txHash2: `0x${'a2'.repeat(32)}`,
    }),
  );
  await book(
    db,
    paymentProven({
      storeId: 'st_a',
      intentId: 'pi_eth_1',
      transfer: transfer(USDT_ETH, BUYER, MERCHANT, 99_000_000n, '2026-11-01T10:05:00Z'),
      token: USDT_ETH,
      expected: { token: USDT_ETH, recipient: MERCHANT, amount: 99_000_000n },
    }),
  );
  await intentRow(db, 'pi_bnb_1', 'st_a', 'order-1002');
  await book(
    db,
    checkoutConfirmed({
      storeId: 'st_a',
      intentId: 'pi_bnb_1',
      occurredAt: new Date('2026-11-02T09:00:00Z'),
      token: USDT_BNB,
      amountCoins: '1234567.890123456789012345',
      actualPaidAmount: '1234568.000000000000000001',
      serviceFeeAmount: '12345.678901234567890123',
      netIncomeAmount: '1222222.321098765432109878',
      fiat: noFiat,
      txHash: `0x${'b1'.repeat(32)}`,
    }),
  );
  await payoutRow(db, 'po_1', 'st_a', USDT_ETH, 'cl_1', '50');
  await book(
    db,
    claimLinkFunded({
      storeId: 'st_a',
      claimLinkId: 'cl_1',
      token: USDT_ETH,
      amount: '50',
      occurredAt: new Date('2026-11-02T15:00:00Z'),
      referenceId: 'ref-po_1',
      fundingTxHash: `0x${'c1'.repeat(32)}`,
    }),
  );
  await book(
    db,
    unmatchedTransfer({
      storeId: 'st_a',
      transfer: transfer(USDT_BNB, BUYER, MERCHANT, 7_000_000_000_000_000_003n, '2026-11-03T08:00:00Z'),
      token: USDT_BNB,
      wallet: { address: MERCHANT, role: 'merchant' },
    }),
  );
  await book(
    db,
    checkoutConfirmed({
      storeId: 'st_b',
      intentId: 'pi_base_1',
      occurredAt: new Date('2026-11-02T11:00:00Z'),
      token: USDC_BASE,
      amountCoins: '25',
      actualPaidAmount: '25',
      serviceFeeAmount: '0.25',
      netIncomeAmount: '24.75',
      fiat: noFiat,
    }),
  );

  // In the period: the first exactly at its start.
  const funding = transfer(USDT_ETH, CUSTODY, POOL, 50_500_000n, PERIOD_FROM.toISOString());
  await book(
    db,
    claimLinkFundingProven({
      storeId: 'st_a',
      claimLinkId: 'cl_1',
      token: USDT_ETH,
      amount: '50',
      transfer: funding,
    }),
  );
  await book(
    db,
    claimLinkClaimed({
      storeId: 'st_a',
      claimLinkId: 'cl_1',
      token: USDT_ETH,
      amount: '50',
      transfer: transfer(USDT_ETH, POOL, RECIPIENT, 50_000_000n, '2026-11-04T10:00:00Z'),
    }),
  );
  const provenBnb = await book(
    db,
    paymentProven({
      storeId: 'st_a',
      intentId: 'pi_bnb_1',
      transfer: transfer(
        USDT_BNB,
        BUYER,
        MERCHANT,
        1_222_222_321_098_765_432_109_878n,
        '2026-11-04T12:00:00Z',
      ),
      token: USDT_BNB,
      expected: { token: USDT_BNB, recipient: MERCHANT, amount: 1_222_222_321_098_765_432_109_878n },
    }),
  );
  // A reorg: the reversal keeps the original's date.
  await reverseEntry(db, provenBnb, HOSTILE_MEMO);
  // pi_eth_1 is cancelled after its proof: rule 4 reverses rule 1 and moves the proven money to suspense.
  const failure = checkoutTerminalFailure({
    storeId: 'st_a',
    intentId: 'pi_eth_1',
    status: CheckoutStatus.CANCELED,
    confirmedEntryPosted: true,
    proven: {
      occurredAt: new Date('2026-11-05T08:00:00Z'),
      amounts: [{ token: USDT_ETH, amount: 99_000_000n }],
    },
  });
  await reverseEntry(db, confirmed1, 'intent ended in CANCELED', {
    occurredAt: new Date('2026-11-05T08:00:00Z'),
  });
  await book(db, failure);
  await payoutRow(db, 'po_2', 'st_a', USDT_BNB, 'cl_2', '10.000000000000000007');
  await book(
    db,
    claimLinkFunded({
      storeId: 'st_a',
      claimLinkId: 'cl_2',
      token: USDT_BNB,
      amount: '10.000000000000000007',
      occurredAt: new Date('2026-11-05T09:00:00Z'),
    }),
  );
  await book(
    db,
    claimLinkCancelled({
      storeId: 'st_a',
      claimLinkId: 'cl_2',
      token: USDT_BNB,
      amount: '10.000000000000000007',
      occurredAt: new Date('2026-11-06T09:00:00Z'),
    }),
  );
  await book(
    db,
    claimLinkRefunded({
      storeId: 'st_a',
      claimLinkId: 'cl_2',
      token: USDT_BNB,
      amount: '10.000000000000000007',
      transfer: transfer(USDT_BNB, POOL, CUSTODY, 9_900_000_000_000_000_000n, '2026-11-06T10:00:00Z'),
    }),
  );
  await book(
    db,
    unmatchedTransfer({
      storeId: 'st_a',
      transfer: transfer(USDT_ETH, MERCHANT, BUYER, 12_345_678n, '2026-11-06T23:59:59.999Z'),
      token: USDT_ETH,
      wallet: { address: MERCHANT, role: 'merchant' },
    }),
  );

  // After the period: the first exactly at its end (excluded).
  await book(
    db,
    unmatchedTransfer({
      storeId: 'st_a',
      transfer: transfer(USDT_ETH, BUYER, MERCHANT, 1_000_000n, PERIOD_TO.toISOString()),
      token: USDT_ETH,
      wallet: { address: MERCHANT, role: 'merchant' },
    }),
  );
  await book(
    db,
    checkoutConfirmed({
      storeId: 'st_b',
      intentId: 'pi_base_2',
      occurredAt: new Date('2026-11-08T11:00:00Z'),
      token: USDC_BASE,
      amountCoins: '5',
      actualPaidAmount: '5',
      serviceFeeAmount: '0',
      netIncomeAmount: '5',
      fiat: noFiat,
    }),
  );
}
