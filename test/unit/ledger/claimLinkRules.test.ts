import { describe, expect, it } from 'vitest';
import type { Token } from '../../../src/ledger/accounts.ts';
import type { EntryDraft } from '../../../src/ledger/entryDraft.ts';
import {
  CLAIM_LINK_EXPIRY_MS,
  type ClaimLinkFactBase,
  claimLinkCancelled,
  claimLinkClaimed,
  claimLinkClaimedAfterExpiry,
  claimLinkClosedKey,
  claimLinkExpired,
  claimLinkExpiresAt,
  claimLinkFunded,
  claimLinkFundingProven,
  claimLinkRefunded,
  isExpired,
} from '../../../src/ledger/rules/claimLinkRules.ts';
import { AmountFormatError } from '../../../src/money/decimalAmount.ts';
import { USDC_BASE, USDT_BNB } from '../../helpers/tokens.ts';
import {
  balanceOf,
  CUSTODY_WALLET,
  hash,
  linesByKind,
  POOL_WALLET,
  STORE,
  STRANGER,
  T0,
  transfer,
  trialBalance,
} from './ledgerFixtures.ts';

const DAY = 24 * 60 * 60 * 1000;

function link(token: Token = USDC_BASE, amount = '25'): ClaimLinkFactBase {
  return { storeId: STORE, claimLinkId: 'cl_1', token, amount };
}

const fundingTransfer = (token: Token, amount: bigint) =>
  transfer(token, {
    amount,
    from: CUSTODY_WALLET,
    to: POOL_WALLET,
    txHash: hash(21),
    blockHash: hash(210, 1),
  });
const claimTransfer = (token: Token, amount: bigint) =>
  transfer(token, { amount, from: POOL_WALLET, to: STRANGER, txHash: hash(22), blockHash: hash(220, 1) });
const refundTransfer = (token: Token, amount: bigint) =>
  transfer(token, {
    amount,
    from: POOL_WALLET,
    to: CUSTODY_WALLET,
    txHash: hash(23),
    blockHash: hash(230, 1),
  });

describe('claimLinkFunded (rule 5)', () => {
  it('behavior: funded link debits claim_pool and credits custody', () => {
    const { entry, findings } = claimLinkFunded({
      ...link(),
      occurredAt: T0,
      referenceId: 'payout-1',
      fundingTxHash: hash(21),
    });
    expect(findings).toEqual([]);
    expect(linesByKind(entry)).toEqual({ 'assets:claim_pool': 25_000_000n, 'assets:custody': -25_000_000n });
    expect(entry).toMatchObject({
      idempotencyKey: 'claim_link:funded:cl_1',
      kind: 'claim_link.funded',
      occurredAt: T0,
      ref: { type: 'claim_link', id: 'cl_1' },
      metadata: { amount: '25', reference_id: 'payout-1', funding_tx_hash: hash(21) },
    });
  });

  it('behavior: 18-decimal USDT link', () => {
    const { entry } = claimLinkFunded({ ...link(USDT_BNB, '0.000000000000000123'), occurredAt: T0 });
    expect(linesByKind(entry)).toEqual({ 'assets:claim_pool': 123n, 'assets:custody': -123n });
  });

  it('error: over-precise link amount throws', () => {
    expect(() => claimLinkFunded({ ...link(USDC_BASE, '1.0000001'), occurredAt: T0 })).toThrow(
      AmountFormatError,
    );
    expect(() => claimLinkFunded({ ...link(USDT_BNB, '1.0000000000000000001'), occurredAt: T0 })).toThrow(
      AmountFormatError,
    );
  });
});

describe('claimLinkFundingProven (rule 5, chain)', () => {
  it('behavior: funding proven for exactly the amount books nothing', () => {
    expect(claimLinkFundingProven({ ...link(), transfer: fundingTransfer(USDC_BASE, 25_000_000n) })).toEqual({
      entry: null,
      findings: [],
    });
  });

  it('behavior: funding proven for a larger sum books the extra as payout fees', () => {
    const t = fundingTransfer(USDC_BASE, 25_300_000n);
    const { entry, findings } = claimLinkFundingProven({ ...link(), transfer: t });
    expect(findings).toEqual([]);
    expect(linesByKind(entry)).toEqual({ 'expense:payout_fees': 300_000n, 'assets:custody': -300_000n });
    expect(entry).toMatchObject({
      idempotencyKey: `claim_link:funding_fee:cl_1:8453:${hash(21)}:0:${hash(210, 1)}`,
      kind: 'claim_link.funding_fee',
      ref: { type: 'claim_link', id: 'cl_1' },
    });
  });

  it('behavior: a later piece books only the new excess over A and the fee earlier pieces booked', () => {
    // 25 funded 20 before (short), this piece 5.5: the link is funded 25.5, fee 0.5.
    const topUp = claimLinkFundingProven({
      ...link(),
      transfer: fundingTransfer(USDC_BASE, 5_500_000n),
      fundedBefore: 20_000_000n,
    });
    expect(topUp.findings).toEqual([]);
    expect(linesByKind(topUp.entry)).toEqual({
      'expense:payout_fees': 500_000n,
      'assets:custody': -500_000n,
    });
    expect(topUp.entry?.metadata).toMatchObject({ funded_before: '20', fee_before: '0' });
    // A second full funding (25.5 after 25.5, 0.5 booked): 25.5 more of fee.
    const twice = claimLinkFundingProven({
      ...link(),
      transfer: fundingTransfer(USDC_BASE, 25_500_000n),
      fundedBefore: 25_500_000n,
      feeBefore: 500_000n,
    });
    expect(linesByKind(twice.entry)).toEqual({
      'expense:payout_fees': 25_500_000n,
      'assets:custody': -25_500_000n,
    });
    // Fee already booked beyond what the funding now shows (a piece orphaned since): nothing.
    const none = claimLinkFundingProven({
      ...link(),
      transfer: fundingTransfer(USDC_BASE, 5_000_000n),
      fundedBefore: 20_000_000n,
      feeBefore: 500_000n,
    });
    expect(none).toEqual({ entry: null, findings: [] });
  });

  it('error: pieces still short of A name the remainder in funding_mismatch', () => {
    const { entry, findings } = claimLinkFundingProven({
      ...link(),
      transfer: fundingTransfer(USDC_BASE, 3_000_000n),
      fundedBefore: 20_000_000n,
    });
    expect(entry).toBeNull();
    expect(findings[0]?.details).toMatchObject({
      funded_on_chain: '23',
      shortfall: '2',
      funded_before: '20',
    });
  });

  it('behavior: 18-decimal funding fee', () => {
    const { entry } = claimLinkFundingProven({
      ...link(USDT_BNB, '25'),
      transfer: fundingTransfer(USDT_BNB, 25n * 10n ** 18n + 1n),
    });
    expect(linesByKind(entry)).toEqual({ 'expense:payout_fees': 1n, 'assets:custody': -1n });
  });

  it('error: funding proven for less than the amount books nothing and reports funding_mismatch', () => {
    const { entry, findings } = claimLinkFundingProven({
      ...link(),
      transfer: fundingTransfer(USDC_BASE, 24_000_000n),
    });
    expect(entry).toBeNull();
    expect(findings).toEqual([
      expect.objectContaining({
        kind: 'funding_mismatch',
        severity: 'warning',
        ref: { type: 'claim_link', id: 'cl_1' },
        details: expect.objectContaining({ amount: '25', funded_on_chain: '24', shortfall: '1' }),
      }),
    ]);
  });

  it('error: a funding transfer of another token throws', () => {
    expect(() =>
      claimLinkFundingProven({ ...link(USDC_BASE), transfer: fundingTransfer(USDT_BNB, 25_000_000n) }),
    ).toThrow(/not the contract of transfer/);
  });
});

describe('claimLinkClaimed (rule 6)', () => {
  it('behavior: claimed link debits payouts and credits claim_pool', () => {
    const { entry, findings } = claimLinkClaimed({
      ...link(),
      transfer: claimTransfer(USDC_BASE, 25_000_000n),
    });
    expect(findings).toEqual([]);
    expect(linesByKind(entry)).toEqual({ 'expense:payouts': 25_000_000n, 'assets:claim_pool': -25_000_000n });
    expect(entry).toMatchObject({
      idempotencyKey: `claim_link:claimed:cl_1:8453:${hash(22)}:0:${hash(220, 1)}`,
      kind: 'claim_link.claimed',
    });
  });

  it('behavior: a claim transfer of another value is booked at the link amount with a finding', () => {
    const { entry, findings } = claimLinkClaimed({
      ...link(),
      transfer: claimTransfer(USDC_BASE, 24_900_000n),
    });
    expect(linesByKind(entry)['expense:payouts']).toBe(25_000_000n);
    expect(findings.map((f) => [f.kind, f.severity, f.details.transferred])).toEqual([
      ['amount_mismatch', 'info', '24.9'],
    ]);
  });
});

describe('claimLinkClaimedAfterExpiry (rule 6 after rule 7)', () => {
  it('behavior: the claim settles the receivable the expiry created, under the key of rule 6, with a finding', () => {
    const expiredAt = new Date(T0.getTime() + 14 * DAY);
    const transfer = claimTransfer(USDC_BASE, 25_000_000n);
    const { entry, findings } = claimLinkClaimedAfterExpiry({ ...link(), transfer, expiredAt });
    expect(linesByKind(entry)).toEqual({
      'expense:payouts': 25_000_000n,
      'assets:refund_receivable': -25_000_000n,
    });
    // The reorg path reverses rule 6 by this key: it must be the same.
    expect(entry?.idempotencyKey).toBe(claimLinkClaimed({ ...link(), transfer }).entry?.idempotencyKey);
    expect(entry).toMatchObject({
      kind: 'claim_link.claimed',
      metadata: { after_expiry: expiredAt.toISOString() },
    });
    expect(findings.map((f) => [f.kind, f.severity, f.details.expired_at])).toEqual([
      ['claimed_after_expiry', 'warning', expiredAt.toISOString()],
    ]);
  });

  it('behavior: with the expiry before it, the link nets to a claim: nothing left in claim_pool or refund_receivable', () => {
    const entries = [
      claimLinkFunded({ ...link(), occurredAt: T0 }).entry,
      claimLinkExpired({ ...link(), fundedAt: T0, now: new Date(T0.getTime() + 14 * DAY) }).entry,
      claimLinkClaimedAfterExpiry({
        ...link(),
        transfer: claimTransfer(USDC_BASE, 24_000_000n),
        expiredAt: new Date(T0.getTime() + 14 * DAY),
      }).entry,
    ].filter((e): e is EntryDraft => e !== null);
    const totals = trialBalance(entries);
    expect(balanceOf(totals, 'assets:claim_pool', USDC_BASE)).toBe(0n);
    expect(balanceOf(totals, 'assets:refund_receivable', USDC_BASE)).toBe(0n);
    expect(balanceOf(totals, 'expense:payouts', USDC_BASE)).toBe(25_000_000n);
  });
});

describe('claimLinkCancelled and claimLinkExpired (rule 7)', () => {
  it('behavior: cancelled link moves the amount from claim_pool to refund_receivable', () => {
    const { entry, findings } = claimLinkCancelled({ ...link(), occurredAt: T0 });
    expect(findings).toEqual([]);
    expect(linesByKind(entry)).toEqual({
      'assets:refund_receivable': 25_000_000n,
      'assets:claim_pool': -25_000_000n,
    });
    expect(entry).toMatchObject({ idempotencyKey: 'claim_link:closed:cl_1', kind: 'claim_link.cancelled' });
  });

  it('behavior: isExpired is false before 14 days and true from 14 days on', () => {
    expect(CLAIM_LINK_EXPIRY_MS).toBe(14 * DAY);
    expect(isExpired(T0, T0)).toBe(false);
    expect(isExpired(T0, new Date(T0.getTime() + 14 * DAY - 1))).toBe(false);
    expect(isExpired(T0, new Date(T0.getTime() + 14 * DAY))).toBe(true);
    expect(isExpired(T0, new Date(T0.getTime() + 30 * DAY))).toBe(true);
    expect(claimLinkExpiresAt(T0).toISOString()).toBe('2025-03-15T12:00:00.000Z');
  });

  it('behavior: expiry before 14 days books nothing', () => {
    expect(claimLinkExpired({ ...link(), fundedAt: T0, now: new Date(T0.getTime() + 14 * DAY - 1) })).toEqual(
      {
        entry: null,
        findings: [],
      },
    );
  });

  it('behavior: expired link books the cancel entry as claim_link.expired at the expiry moment', () => {
    const { entry } = claimLinkExpired({ ...link(), fundedAt: T0, now: new Date(T0.getTime() + 20 * DAY) });
    expect(linesByKind(entry)).toEqual({
      'assets:refund_receivable': 25_000_000n,
      'assets:claim_pool': -25_000_000n,
    });
    expect(entry).toMatchObject({
      idempotencyKey: 'claim_link:closed:cl_1',
      kind: 'claim_link.expired',
      occurredAt: new Date('2025-03-15T12:00:00.000Z'),
      metadata: { funded_at: T0.toISOString(), expired_at: '2025-03-15T12:00:00.000Z' },
    });
  });

  it('behavior: cancel and expiry share one key, so a link closes once', () => {
    const cancel = claimLinkCancelled({ ...link(), occurredAt: T0 }).entry!;
    const expiry = claimLinkExpired({ ...link(), fundedAt: T0, now: new Date(T0.getTime() + 15 * DAY) })
      .entry!;
    expect(cancel.idempotencyKey).toBe(expiry.idempotencyKey);
    expect(cancel.idempotencyKey).toBe(claimLinkClosedKey('cl_1'));
  });
});

describe('claimLinkRefunded (rule 8)', () => {
  it('behavior: refund equal to the receivable clears it, no fee line', () => {
    const { entry } = claimLinkRefunded({ ...link(), transfer: refundTransfer(USDC_BASE, 25_000_000n) });
    expect(linesByKind(entry)).toEqual({
      'assets:custody': 25_000_000n,
      'assets:refund_receivable': -25_000_000n,
    });
    expect(entry).toMatchObject({
      idempotencyKey: `claim_link:refunded:cl_1:8453:${hash(23)}:0:${hash(230, 1)}`,
      kind: 'claim_link.refunded',
      metadata: expect.objectContaining({ amount: '25', refunded: '25' }),
    });
  });

  it('error: a transfer of 0 out of the pool (anyone can emit one) is no refund: no entry, not the whole amount as fees', () => {
    expect(claimLinkRefunded({ ...link(), transfer: refundTransfer(USDC_BASE, 0n) })).toEqual({
      entry: null,
      findings: [],
    });
  });

  it('behavior: a refund smaller than the receivable clears what arrived and leaves the rest owed (no fees written off)', () => {
    const { entry } = claimLinkRefunded({ ...link(), transfer: refundTransfer(USDC_BASE, 24_750_000n) });
    expect(linesByKind(entry)).toEqual({
      'assets:custody': 24_750_000n,
      'assets:refund_receivable': -24_750_000n,
    });
    expect(entry?.metadata).toMatchObject({ receivable_before: '25', receivable_left: '0.25' });
  });

  it('behavior: the piece that clears what is still owed clears only that; its excess is a funding overpayment returned', () => {
    const second = claimLinkRefunded({
      ...link(),
      transfer: refundTransfer(USDC_BASE, 10_000_000n),
      receivable: 8_000_000n,
    });
    expect(linesByKind(second.entry)).toEqual({
      'assets:custody': 10_000_000n,
      'assets:refund_receivable': -8_000_000n,
      'expense:payout_fees': -2_000_000n,
    });
  });

  it('error: nothing owed any more is no refund for this rule (the caller sends it to suspense)', () => {
    expect(
      claimLinkRefunded({ ...link(), transfer: refundTransfer(USDC_BASE, 1_000_000n), receivable: 0n }),
    ).toEqual({ entry: null, findings: [] });
  });

  it('behavior: refund larger than expected credits the difference back out of payout_fees', () => {
    const { entry } = claimLinkRefunded({ ...link(), transfer: refundTransfer(USDC_BASE, 25_300_000n) });
    expect(linesByKind(entry)).toEqual({
      'assets:custody': 25_300_000n,
      'assets:refund_receivable': -25_000_000n,
      'expense:payout_fees': -300_000n,
    });
  });

  it('behavior: 18-decimal refund smaller by one base unit', () => {
    const { entry } = claimLinkRefunded({
      ...link(USDT_BNB, '25'),
      transfer: refundTransfer(USDT_BNB, 25n * 10n ** 18n - 1n),
    });
    expect(linesByKind(entry)).toEqual({
      'assets:custody': 25n * 10n ** 18n - 1n,
      'assets:refund_receivable': -(25n * 10n ** 18n - 1n),
    });
  });
});

describe('claim-link lifecycles (rules 5-8 together)', () => {
  type Close = 'cancel' | 'expiry';
  const cases: Array<[Close, string, bigint]> = [];
  for (const close of ['cancel', 'expiry'] as const) {
    for (const [label, refund] of [
      ['smaller', 24_500_000n],
      ['equal', 25_000_000n],
      ['larger', 25_200_000n],
    ] as const) {
      cases.push([close, label, refund]);
    }
  }

  it.each(cases)('behavior: funded with fee, %s, refund %s than expected', (close, _label, refund) => {
    const X = 25_200_000n; // 0.2 USDC of fees at funding
    const entries: EntryDraft[] = [];
    const push = (e: EntryDraft | null) => {
      if (e !== null) entries.push(e);
    };
    push(claimLinkFunded({ ...link(), occurredAt: T0 }).entry);
    push(claimLinkFundingProven({ ...link(), transfer: fundingTransfer(USDC_BASE, X) }).entry);
    push(
      close === 'cancel'
        ? claimLinkCancelled({ ...link(), occurredAt: T0 }).entry
        : claimLinkExpired({ ...link(), fundedAt: T0, now: new Date(T0.getTime() + 14 * DAY) }).entry,
    );
    push(claimLinkRefunded({ ...link(), transfer: refundTransfer(USDC_BASE, refund) }).entry);
    const totals = trialBalance(entries);
    expect(balanceOf(totals, 'assets:claim_pool', USDC_BASE)).toBe(0n);
    const A = 25_000_000n;
    // what did not come back is still owed (a refund may come in pieces: rule 8 writes nothing off).
    expect(balanceOf(totals, 'assets:refund_receivable', USDC_BASE)).toBe(refund < A ? A - refund : 0n);
    // custody moved exactly what the chain moved: -X out at funding, +refund back.
    expect(balanceOf(totals, 'assets:custody', USDC_BASE)).toBe(refund - X);
    // the fees kept at funding, less an overpayment the refund returned.
    expect(balanceOf(totals, 'expense:payout_fees', USDC_BASE)).toBe(X - A - (refund > A ? refund - A : 0n));
    expect(balanceOf(totals, 'expense:payouts', USDC_BASE)).toBe(0n);
  });

  it('behavior: funded without extra fees and claimed', () => {
    const entries = [
      claimLinkFunded({ ...link(), occurredAt: T0 }).entry,
      claimLinkFundingProven({ ...link(), transfer: fundingTransfer(USDC_BASE, 25_000_000n) }).entry,
      claimLinkClaimed({ ...link(), transfer: claimTransfer(USDC_BASE, 25_000_000n) }).entry,
    ].filter((e): e is EntryDraft => e !== null);
    expect(entries).toHaveLength(2);
    const totals = trialBalance(entries);
    expect(balanceOf(totals, 'assets:claim_pool', USDC_BASE)).toBe(0n);
    expect(balanceOf(totals, 'assets:custody', USDC_BASE)).toBe(-25_000_000n);
    expect(balanceOf(totals, 'expense:payouts', USDC_BASE)).toBe(25_000_000n);
    expect(balanceOf(totals, 'expense:payout_fees', USDC_BASE)).toBe(0n);
  });
});
