import { describe, expect, it } from 'vitest';
import type { ChainTransferFact } from '../../../src/ledger/rules/chainTransferFact.ts';
import { paymentProven } from '../../../src/ledger/rules/chainTransferRules.ts';
import { paymentCandidate } from '../../../src/payments/verifyPayments.ts';
import { USDC_BASE } from '../../helpers/tokens.ts';
import { MERCHANT_WALLET, STORE, STRANGER, transfer } from '../ledger/ledgerFixtures.ts';

/**
 * Single-transaction verification reads a receipt whose logs may pay several intents (a batch) or
 * one intent in parts (a split): rule 2's checks must see the payment of THIS intent, or a good
 * payment raises a false `amount_mismatch`.
 */
const N = 25_000_000n;
const expected = { recipient: MERCHANT_WALLET.toLowerCase(), tokenAddress: USDC_BASE.address, amount: N };
const logs = (...parts: Array<Partial<ChainTransferFact>>) =>
  parts.map((p, logIndex) => transfer(USDC_BASE, { logIndex, ...p }));

function findingsFor(transfers: ChainTransferFact[]): string[] {
  const candidate = paymentCandidate(transfers, expected);
  if (!candidate) return ['(none)'];
  return paymentProven({
    storeId: STORE,
    intentId: 'i1',
    transfer: candidate,
    token: USDC_BASE,
    expected: { token: USDC_BASE, recipient: MERCHANT_WALLET, amount: N },
  }).findings.map((f) => f.kind);
}

describe('paymentCandidate (verification by receipt)', () => {
  it('behavior: a batch transaction paying 10 to another intent first, then our 25: the 25 log, no finding', () => {
    const receipt = logs({ amount: 10_000_000n }, { amount: N });
    expect(paymentCandidate(receipt, expected)?.logIndex).toBe(1);
    expect(findingsFor(receipt)).toEqual([]);
  });

  it('behavior: one payment split as 10 + 15 into the wallet counts as 25, no finding', () => {
    const receipt = logs({ amount: 10_000_000n }, { amount: 15_000_000n });
    expect(paymentCandidate(receipt, expected)?.amount).toBe(N);
    expect(findingsFor(receipt)).toEqual([]);
  });

  it('behavior: logs of another token or to another address are not summed into the payment', () => {
    const otherToken = `0x${'99'.repeat(20)}` as const;
    expect(
      findingsFor(logs({ amount: 10_000_000n }, { amount: 15_000_000n, tokenAddress: otherToken })),
    ).toEqual(['amount_mismatch']);
    expect(findingsFor(logs({ amount: 10_000_000n }, { amount: 15_000_000n, to: STRANGER }))).toEqual([
      'amount_mismatch',
    ]);
  });

  it('error: nothing into the wallet: the first log, so the findings name where the money went', () => {
    const receipt = logs({ amount: N, to: STRANGER });
    expect(paymentCandidate(receipt, expected)?.to).toBe(STRANGER);
    expect(findingsFor(receipt)).toEqual(['recipient_mismatch']);
    expect(paymentCandidate([], expected)).toBeUndefined();
  });
});
