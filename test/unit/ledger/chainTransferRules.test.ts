import { describe, expect, it } from 'vitest';
import type { ChainTransferFact } from '../../../src/ledger/rules/chainTransferFact.ts';
import {
  chainEntryKey,
  type PaymentProofInput,
  paymentProofKey,
  paymentProven,
  paymentReturned,
  paymentReturnedKey,
  reorgReversal,
  unmatchedTransfer,
} from '../../../src/ledger/rules/chainTransferRules.ts';
import { USDC_BASE, USDT_BNB } from '../../helpers/tokens.ts';
import {
  balanceOf,
  CUSTODY_WALLET,
  hash,
  linesByKind,
  MERCHANT_WALLET,
  reversalOf,
  STORE,
  STRANGER,
  T0,
  transfer,
  trialBalance,
} from './ledgerFixtures.ts';

const N6 = 9_900_000n;
const N18 = 99_500000000000000000n;

function proofInput(t: ChainTransferFact, overrides: Partial<PaymentProofInput> = {}): PaymentProofInput {
  const token = t.chainId === USDT_BNB.chainId ? USDT_BNB : USDC_BASE;
  return {
    storeId: STORE,
    intentId: 'i1',
    transfer: t,
    token,
    expected: { token, recipient: MERCHANT_WALLET, amount: t.amount },
    ...overrides,
  };
}

describe('paymentProven (rule 2)', () => {
  it('behavior: matching 6-decimal transfer debits wallet and credits in_transit', () => {
    const t = transfer(USDC_BASE, { amount: N6, txHash: hash(7), logIndex: 3, blockHash: hash(500, 1) });
    const { entry, findings } = paymentProven(proofInput(t));
    expect(findings).toEqual([]);
    expect(linesByKind(entry)).toEqual({ 'assets:wallet': N6, 'assets:in_transit': -N6 });
    expect(entry).toMatchObject({
      idempotencyKey: `chain:proof:8453:${hash(7)}:3:${hash(500, 1)}`,
      kind: 'chain.payment_proven',
      occurredAt: T0,
      ref: { type: 'checkout_intent', id: 'i1' },
      metadata: { tx_hash: hash(7), log_index: 3, block_hash: hash(500, 1), value: N6.toString() },
    });
  });

  it('behavior: matching 18-decimal transfer on BNB', () => {
    const t = transfer(USDT_BNB, { amount: N18 });
    const { entry } = paymentProven(proofInput(t));
    expect(linesByKind(entry)).toEqual({ 'assets:wallet': N18, 'assets:in_transit': -N18 });
    expect(entry!.idempotencyKey.startsWith('chain:proof:56:')).toBe(true);
  });

  it('behavior: addresses and hashes compare and key case-insensitively', () => {
    const lower = transfer(USDC_BASE, { amount: N6, txHash: hash(0xabc) });
    const upper = {
      ...lower,
      txHash: lower.txHash.toUpperCase().replace('0X', '0x') as `0x${string}`,
      to: MERCHANT_WALLET.toUpperCase().replace('0X', '0x') as `0x${string}`,
      tokenAddress: USDC_BASE.address.toUpperCase().replace('0X', '0x') as `0x${string}`,
    };
    expect(paymentProven(proofInput(upper)).entry!.idempotencyKey).toBe(paymentProofKey(lower));
  });

  it('error: amount different from N gives amount_mismatch and no entry', () => {
    const t = transfer(USDC_BASE, { amount: N6 - 1n });
    const { entry, findings } = paymentProven(
      proofInput(t, { expected: { token: USDC_BASE, recipient: MERCHANT_WALLET, amount: N6 } }),
    );
    expect(entry).toBeNull();
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      kind: 'amount_mismatch',
      severity: 'warning',
      ref: { type: 'checkout_intent', id: 'i1' },
      details: { expected_amount: '9.9', transferred: '9.899999' },
    });
  });

  it('behavior: a lone log above what in_transit holds clears that much and books the excess to suspense, never a negative in_transit', () => {
    const t = transfer(USDC_BASE, { amount: N6 + 100n });
    const { entry, findings } = paymentProven(proofInput(t, { inTransit: N6 }));
    expect(findings).toEqual([]);
    expect(linesByKind(entry)).toEqual({
      'assets:wallet': N6 + 100n,
      'assets:in_transit': -N6,
      'assets:suspense': -100n,
    });
    // Below it (the rest of N waits in in_transit) or equal: two lines, as without it.
    const under = transfer(USDC_BASE, { amount: N6 - 100n });
    expect(linesByKind(paymentProven(proofInput(under, { inTransit: N6 })).entry)).toEqual({
      'assets:wallet': N6 - 100n,
      'assets:in_transit': -(N6 - 100n),
    });
  });

  it('error: transfer to another address gives recipient_mismatch', () => {
    const t = transfer(USDC_BASE, { amount: N6, to: STRANGER });
    const { entry, findings } = paymentProven(proofInput(t));
    expect(entry).toBeNull();
    expect(findings.map((f) => f.kind)).toEqual(['recipient_mismatch']);
  });

  it('error: accepted token other than the intent token gives token_mismatch', () => {
    const t = transfer(USDT_BNB, { amount: N6 });
    const { entry, findings } = paymentProven(
      proofInput(t, {
        token: USDT_BNB,
        expected: { token: USDC_BASE, recipient: MERCHANT_WALLET, amount: N6 },
      }),
    );
    expect(entry).toBeNull();
    expect(findings.map((f) => f.kind)).toEqual(['token_mismatch']);
  });

  it('error: a contract that is not accepted is never a payment, whatever it claims', () => {
    const fake = transfer(USDC_BASE, {
      amount: N6,
      tokenAddress: '0x9999999999999999999999999999999999999999',
    });
    const { entry, findings } = paymentProven(proofInput(fake, { token: null }));
    expect(entry).toBeNull();
    expect(findings.map((f) => [f.kind, f.severity])).toEqual([['payment_unknown_token', 'warning']]);
  });

  it('error: every mismatch is reported at once', () => {
    const t = transfer(USDC_BASE, {
      amount: 1n,
      to: STRANGER,
      tokenAddress: '0x9999999999999999999999999999999999999999',
    });
    const { findings } = paymentProven(
      proofInput(t, { token: null, expected: { token: USDC_BASE, recipient: MERCHANT_WALLET, amount: N6 } }),
    );
    expect(findings.map((f) => f.kind)).toEqual([
      'payment_unknown_token',
      'recipient_mismatch',
      'amount_mismatch',
    ]);
  });

  it('error: a registry token of another contract than the log is a caller bug', () => {
    const t = transfer(USDC_BASE, { amount: N6 });
    expect(() => paymentProven(proofInput(t, { token: USDT_BNB }))).toThrow(/not the contract of transfer/);
  });

  it('error: a negative transfer value throws', () => {
    expect(() => paymentProven(proofInput(transfer(USDC_BASE, { amount: -1n })))).toThrow(RangeError);
  });
});

describe('reorgReversal (rule 3)', () => {
  const original = transfer(USDC_BASE, {
    amount: N6,
    txHash: hash(7),
    blockNumber: 500n,
    blockHash: hash(500, 1),
  });
  const reincluded = { ...original, blockNumber: 501n, blockHash: hash(501, 2) };

  it('behavior: a proven transfer orphaned by a reorg names its proof entry to reverse', () => {
    const decision = reorgReversal({ transfer: original, posted: { kind: 'payment_proof' } });
    expect(decision.entry).toBeNull();
    expect(decision.reverse).toBe(paymentProofKey(original));
    expect(decision.findings).toEqual([
      {
        kind: 'reorged_transfer',
        severity: 'warning',
        ref: { type: 'chain_transfer', id: `8453:${hash(7)}:0` },
        details: expect.objectContaining({
          block_hash: hash(500, 1),
          block_number: '500',
          booked_as: 'payment_proof',
          reversed_entry: paymentProofKey(original),
        }),
      },
    ]);
  });

  it('behavior: re-inclusion in a new block is a new entry with a new key', () => {
    const first = paymentProven(proofInput(original)).entry!;
    const second = paymentProven(proofInput(reincluded)).entry!;
    expect(second.idempotencyKey).not.toBe(first.idempotencyKey);
    expect(second.idempotencyKey).toBe(`chain:proof:8453:${hash(7)}:0:${hash(501, 2)}`);
    expect(second.lines).toEqual(first.lines);
    // proof, reversal, proof again: the wallet holds N once and in_transit is back to -N.
    const totals = trialBalance([first, reversalOf(first), second]);
    expect(balanceOf(totals, 'assets:wallet', USDC_BASE)).toBe(N6);
    expect(balanceOf(totals, 'assets:in_transit', USDC_BASE)).toBe(-N6);
  });

  it('behavior: an inclusion revived after its reversal books under keys of its own; the first keys are unchanged', () => {
    const revived = { ...original, revival: 1 };
    const first = paymentProven(proofInput(original)).entry!;
    const again = paymentProven(proofInput(revived)).entry!;
    expect(first.idempotencyKey).toBe(`chain:proof:8453:${hash(7)}:0:${hash(500, 1)}`);
    expect(paymentProven(proofInput({ ...original, revival: 0 })).entry!.idempotencyKey).toBe(
      first.idempotencyKey,
    );
    expect(again.idempotencyKey).toBe(`chain:proof:8453:${hash(7)}:0:${hash(500, 1)}:r1`);
    expect(reorgReversal({ transfer: revived, posted: { kind: 'payment_proof' } }).reverse).toBe(
      again.idempotencyKey,
    );
    const totals = trialBalance([first, reversalOf(first), again]);
    expect(balanceOf(totals, 'assets:wallet', USDC_BASE)).toBe(N6);
    expect(() => paymentProven(proofInput({ ...original, revival: -1 }))).toThrow(/invalid revival -1/);
  });

  it('behavior: an orphaned transfer nothing was booked from still reports, reverses nothing', () => {
    const decision = reorgReversal({ transfer: original, posted: null });
    expect(decision.reverse).toBeNull();
    expect(decision.findings.map((f) => f.kind)).toEqual(['reorged_transfer']);
  });

  it.each([
    [{ kind: 'payment_returned' } as const, 'chain:returned:'],
    [{ kind: 'transfer_in_unmatched' } as const, 'chain:unmatched_in:'],
    [{ kind: 'transfer_out_unmatched' } as const, 'chain:unmatched_out:'],
    [{ kind: 'claim_link_funding_fee', claimLinkId: 'cl1' } as const, 'claim_link:funding_fee:cl1:'],
    [{ kind: 'claim_link_claimed', claimLinkId: 'cl1' } as const, 'claim_link:claimed:cl1:'],
    [{ kind: 'claim_link_refunded', claimLinkId: 'cl1' } as const, 'claim_link:refunded:cl1:'],
  ])('behavior: reverses the %o entry of the orphaned inclusion', (posted, prefix) => {
    const decision = reorgReversal({ transfer: original, posted });
    expect(decision.reverse).toBe(`${prefix}8453:${hash(7)}:0:${hash(500, 1)}`);
    expect(chainEntryKey(reincluded, posted)).not.toBe(decision.reverse);
  });
});

describe('unmatchedTransfer (rule 9)', () => {
  it('behavior: unmatched in to the merchant wallet debits wallet, credits suspense', () => {
    const t = transfer(USDC_BASE, { amount: 5_000_000n, to: MERCHANT_WALLET, from: STRANGER });
    const { entry, findings } = unmatchedTransfer({
      storeId: STORE,
      transfer: t,
      token: USDC_BASE,
      wallet: { address: MERCHANT_WALLET, role: 'merchant' },
    });
    expect(linesByKind(entry)).toEqual({ 'assets:wallet': 5_000_000n, 'assets:suspense': -5_000_000n });
    expect(entry).toMatchObject({
      idempotencyKey: `chain:unmatched_in:8453:${t.txHash}:0:${t.blockHash}`,
      kind: 'chain.transfer_in_unmatched',
      ref: { type: 'chain_transfer', id: `8453:${t.txHash}:0` },
    });
    expect(findings).toEqual([
      expect.objectContaining({
        kind: 'unmatched_transfer_in',
        severity: 'warning',
        details: expect.objectContaining({ amount: '5', token: 'USDC', wallet_role: 'merchant' }),
      }),
    ]);
  });

  it('behavior: unmatched out of the merchant wallet debits owner_transfers, credits wallet', () => {
    const t = transfer(USDT_BNB, { amount: 10n ** 18n, from: MERCHANT_WALLET, to: STRANGER });
    const { entry, findings } = unmatchedTransfer({
      storeId: STORE,
      transfer: t,
      token: USDT_BNB,
      wallet: { address: MERCHANT_WALLET, role: 'merchant' },
    });
    expect(linesByKind(entry)).toEqual({
      'equity:owner_transfers': 10n ** 18n,
      'assets:wallet': -(10n ** 18n),
    });
    expect(entry!.kind).toBe('chain.transfer_out_unmatched');
    expect(entry!.idempotencyKey.startsWith('chain:unmatched_out:56:')).toBe(true);
    expect(findings.map((f) => f.kind)).toEqual(['unmatched_transfer_out']);
  });

  it('behavior: unmatched in and out of the custody wallet use assets:custody', () => {
    const into = unmatchedTransfer({
      storeId: STORE,
      transfer: transfer(USDC_BASE, { amount: 7n, to: CUSTODY_WALLET }),
      token: USDC_BASE,
      wallet: { address: CUSTODY_WALLET, role: 'custody' },
    });
    expect(linesByKind(into.entry)).toEqual({ 'assets:custody': 7n, 'assets:suspense': -7n });
    const out = unmatchedTransfer({
      storeId: STORE,
      transfer: transfer(USDC_BASE, { amount: 7n, from: CUSTODY_WALLET, to: STRANGER }),
      token: USDC_BASE,
      wallet: { address: CUSTODY_WALLET, role: 'custody' },
    });
    expect(linesByKind(out.entry)).toEqual({ 'equity:owner_transfers': 7n, 'assets:custody': -7n });
  });

  it('behavior: a move from the merchant wallet to custody is out of one and into the other, two keys', () => {
    const t = transfer(USDC_BASE, { amount: 3n, from: MERCHANT_WALLET, to: CUSTODY_WALLET });
    const out = unmatchedTransfer({
      storeId: STORE,
      transfer: t,
      token: USDC_BASE,
      wallet: { address: MERCHANT_WALLET, role: 'merchant' },
    });
    const into = unmatchedTransfer({
      storeId: STORE,
      transfer: t,
      token: USDC_BASE,
      wallet: { address: CUSTODY_WALLET, role: 'custody' },
    });
    expect(out.entry!.idempotencyKey).not.toBe(into.entry!.idempotencyKey);
  });

  it('behavior: a token that is not accepted books nothing and reports unknown_token (info)', () => {
    const t = transfer(USDC_BASE, {
      amount: 1000n,
      tokenAddress: '0x9999999999999999999999999999999999999999',
    });
    const { entry, findings } = unmatchedTransfer({
      storeId: STORE,
      transfer: t,
      token: null,
      wallet: { address: MERCHANT_WALLET, role: 'merchant' },
    });
    expect(entry).toBeNull();
    expect(findings.map((f) => [f.kind, f.severity, f.details.direction])).toEqual([
      ['unknown_token', 'info', 'in'],
    ]);
  });

  it('behavior: zero-value and self transfers move nothing and report nothing', () => {
    const wallet = { address: MERCHANT_WALLET, role: 'merchant' as const };
    expect(
      unmatchedTransfer({
        storeId: STORE,
        transfer: transfer(USDC_BASE, { amount: 0n }),
        token: USDC_BASE,
        wallet,
      }),
    ).toEqual({ entry: null, findings: [] });
    expect(
      unmatchedTransfer({
        storeId: STORE,
        transfer: transfer(USDC_BASE, { amount: 5n, from: MERCHANT_WALLET, to: MERCHANT_WALLET }),
        token: USDC_BASE,
        wallet,
      }),
    ).toEqual({ entry: null, findings: [] });
  });

  it('behavior: re-inclusion after a reorg is a new key', () => {
    const wallet = { address: MERCHANT_WALLET, role: 'merchant' as const };
    const a = transfer(USDC_BASE, { amount: 5n, blockHash: hash(9, 1) });
    const b = { ...a, blockHash: hash(9, 2) };
    const keyA = unmatchedTransfer({ storeId: STORE, transfer: a, token: USDC_BASE, wallet }).entry!
      .idempotencyKey;
    const keyB = unmatchedTransfer({ storeId: STORE, transfer: b, token: USDC_BASE, wallet }).entry!
      .idempotencyKey;
    expect(keyA).not.toBe(keyB);
    expect(reorgReversal({ transfer: a, posted: { kind: 'transfer_in_unmatched' } }).reverse).toBe(keyA);
  });

  it('error: a transfer that does not touch the wallet throws', () => {
    expect(() =>
      unmatchedTransfer({
        storeId: STORE,
        transfer: transfer(USDC_BASE, { amount: 5n, from: STRANGER, to: STRANGER }),
        token: USDC_BASE,
        wallet: { address: MERCHANT_WALLET, role: 'merchant' },
      }),
    ).toThrow(/neither enters nor leaves/);
  });
});

describe('paymentReturned (rule 9: a payment sent back)', () => {
  const paid = transfer(USDC_BASE, {
    amount: 20_000_000n,
    from: STRANGER,
    to: MERCHANT_WALLET,
    txHash: hash(30),
  });
  const returned = transfer(USDC_BASE, {
    amount: 20_000_000n,
    from: MERCHANT_WALLET,
    to: STRANGER,
    txHash: hash(31),
    blockNumber: 600n,
    blockHash: hash(600, 3),
  });

  it('behavior: clears the suspense the arrival was booked to: with it, wallet and suspense net to zero', () => {
    const arrival = unmatchedTransfer({
      storeId: STORE,
      transfer: paid,
      token: USDC_BASE,
      wallet: { address: MERCHANT_WALLET, role: 'merchant' },
    }).entry!;
    const { entry, findings } = paymentReturned({
      storeId: STORE,
      intentId: 'i9',
      returned,
      paid,
      token: USDC_BASE,
    });
    expect(findings).toEqual([]);
    expect(entry).toMatchObject({
      kind: 'chain.payment_returned',
      idempotencyKey: `chain:returned:8453:${hash(31)}:0:${hash(600, 3)}`,
      ref: { type: 'chain_transfer', id: `8453:${hash(31)}:0` },
      metadata: expect.objectContaining({ intent_id: 'i9', paid_tx_hash: hash(30) }),
    });
    expect(entry!.idempotencyKey).toBe(paymentReturnedKey(returned));
    expect(linesByKind(entry)).toEqual({ 'assets:suspense': 20_000_000n, 'assets:wallet': -20_000_000n });
    const totals = trialBalance([arrival, entry!]);
    expect(balanceOf(totals, 'assets:wallet', USDC_BASE)).toBe(0n);
    expect(balanceOf(totals, 'assets:suspense', USDC_BASE)).toBe(0n);
  });

  it.each([
    ['another amount', { amount: 19_999_999n }],
    ['another recipient', { to: CUSTODY_WALLET }],
    ['another token contract', { tokenAddress: USDT_BNB.address }],
  ])('error: a transfer that does not mirror the payment (%s) is refused', (_name, change) => {
    expect(() =>
      paymentReturned({
        storeId: STORE,
        intentId: 'i9',
        returned: { ...returned, ...change },
        paid,
        token: USDC_BASE,
      }),
    ).toThrow(RangeError);
  });
});
