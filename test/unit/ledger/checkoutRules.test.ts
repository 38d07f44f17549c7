import { describe, expect, it } from 'vitest';
import { isBalanced } from '../../../src/ledger/rules/balanceCheck.ts';
import {
  CHECKOUT_FAILURE_STATUSES,
  type CheckoutConfirmedFact,
  type CheckoutFailureStatus,
  checkoutConfirmed,
  checkoutConfirmedKey,
  checkoutProvenReversedKey,
  checkoutTerminalFailure,
} from '../../../src/ledger/rules/checkoutRules.ts';
import { AmountFormatError } from '../../../src/money/decimalAmount.ts';
import { CheckoutStatus } from '../../../src/svc/models/checkoutStatus.ts';
import { USDC_BASE, USDT_BNB } from '../../helpers/tokens.ts';
import { linesByKind, STORE, T0 } from './ledgerFixtures.ts';

function confirmed(overrides: Partial<CheckoutConfirmedFact> = {}): CheckoutConfirmedFact {
  return {
    storeId: STORE,
    intentId: '65f0c0ffee0000000000000a',
    occurredAt: T0,
    token: USDC_BASE,
    amountCoins: '10',
    actualPaidAmount: '10',
    serviceFeeAmount: '0.1',
    netIncomeAmount: '9.9',
    fiat: { amountCents: 920n, currency: 44, currencyRate: '0.92' },
    txHash: '0xaa',
    txHash2: '0xbb',
    ...overrides,
  };
}

describe('checkoutConfirmed (rule 1)', () => {
  it('behavior: exact payment through a temporary wallet books net, fee and sales', () => {
    const { entry, findings } = checkoutConfirmed(confirmed());
    expect(findings).toEqual([]);
    expect(linesByKind(entry)).toEqual({
      'assets:in_transit': 9_900_000n,
      'expense:service_fees': 100_000n,
      'income:sales': -10_000_000n,
    });
    expect(entry).toMatchObject({
      idempotencyKey: 'checkout:confirmed:65f0c0ffee0000000000000a',
      kind: 'checkout.confirmed',
      occurredAt: T0,
      storeId: STORE,
      ref: { type: 'checkout_intent', id: '65f0c0ffee0000000000000a' },
    });
    expect(isBalanced(entry!.lines)).toBe(true);
  });

  it('behavior: exact direct payment (F = 0, N = P) has no fee line', () => {
    const { entry, findings } = checkoutConfirmed(
      confirmed({ serviceFeeAmount: '0', netIncomeAmount: '10', txHash2: null }),
    );
    expect(findings).toEqual([]);
    expect(linesByKind(entry)).toEqual({ 'assets:in_transit': 10_000_000n, 'income:sales': -10_000_000n });
  });

  it('behavior: underpayment debits sales_shortfall and reports underpaid', () => {
    const { entry, findings } = checkoutConfirmed(
      confirmed({ actualPaidAmount: '9.5', serviceFeeAmount: '0.095', netIncomeAmount: '9.405' }),
    );
    expect(linesByKind(entry)).toEqual({
      'assets:in_transit': 9_405_000n,
      'expense:service_fees': 95_000n,
      'expense:sales_shortfall': 500_000n,
      'income:sales': -10_000_000n,
    });
    expect(findings).toEqual([
      {
        kind: 'underpaid',
        severity: 'info',
        ref: { type: 'checkout_intent', id: '65f0c0ffee0000000000000a' },
        details: {
          amount_coins: '10',
          actual_paid_amount: '9.5',
          difference: '0.5',
          token: 'USDC',
          chain_id: 8453,
        },
      },
    ]);
  });

  it('behavior: overpayment credits customer_overpayments and reports overpaid', () => {
    const { entry, findings } = checkoutConfirmed(
      confirmed({ actualPaidAmount: '12.25', serviceFeeAmount: '0', netIncomeAmount: '12.25' }),
    );
    expect(linesByKind(entry)).toEqual({
      'assets:in_transit': 12_250_000n,
      'income:sales': -10_000_000n,
      'liability:customer_overpayments': -2_250_000n,
    });
    expect(findings.map((f) => [f.kind, f.severity, f.details.difference])).toEqual([
      ['overpaid', 'info', '2.25'],
    ]);
  });

  it('behavior: overpayment through a temporary wallet books fee and overpayment', () => {
    const { entry } = checkoutConfirmed(
      confirmed({ actualPaidAmount: '11', serviceFeeAmount: '0.11', netIncomeAmount: '10.89' }),
    );
    expect(linesByKind(entry)).toEqual({
      'assets:in_transit': 10_890_000n,
      'expense:service_fees': 110_000n,
      'income:sales': -10_000_000n,
      'liability:customer_overpayments': -1_000_000n,
    });
  });

  it('behavior: nothing paid on a confirmed intent books the whole request as shortfall', () => {
    const { entry } = checkoutConfirmed(
      confirmed({ actualPaidAmount: '0', serviceFeeAmount: '0', netIncomeAmount: '0' }),
    );
    expect(linesByKind(entry)).toEqual({
      'expense:sales_shortfall': 10_000_000n,
      'income:sales': -10_000_000n,
    });
  });

  it('behavior: 18-decimal USDT on BNB keeps every base unit', () => {
    const { entry, findings } = checkoutConfirmed(
      confirmed({
        token: USDT_BNB,
        amountCoins: '100.000000000000000001',
        actualPaidAmount: '100.000000000000000001',
        serviceFeeAmount: '0.500000000000000001',
        netIncomeAmount: '99.5',
      }),
    );
    expect(findings).toEqual([]);
    expect(linesByKind(entry)).toEqual({
      'assets:in_transit': 99_500000000000000000n,
      'expense:service_fees': 500000000000000001n,
      'income:sales': -100_000000000000000001n,
    });
    expect(entry!.lines.every((l) => l.account.token === USDT_BNB)).toBe(true);
  });

  it('behavior: fiat context goes to metadata, amount_cents as a string', () => {
    const { entry } = checkoutConfirmed(confirmed());
    expect(entry!.metadata).toEqual({
      amount_coins: '10',
      actual_paid_amount: '10',
      service_fee_amount: '0.1',
      net_income_amount: '9.9',
      net_source: 'reported',
      amount_cents: '920',
      currency: 44,
      currency_rate: '0.92',
      tx_hash: '0xaa',
      tx_hash_2: '0xbb',
    });
    expect(() => JSON.stringify(entry!.metadata)).not.toThrow();
  });

  it('behavior: stable-coin priced intent has null fiat metadata', () => {
    const { entry } = checkoutConfirmed(
      confirmed({ fiat: { amountCents: null, currency: null, currencyRate: null }, txHash: undefined }),
    );
    expect(entry!.metadata).toMatchObject({
      amount_cents: null,
      currency: null,
      currency_rate: null,
      tx_hash: null,
    });
  });

  it('error: P - F != N without proof gives no entry and a fee_arithmetic_mismatch warning', () => {
    const { entry, findings } = checkoutConfirmed(confirmed({ netIncomeAmount: '9.8' }));
    expect(entry).toBeNull();
    expect(findings).toEqual([
      {
        kind: 'fee_arithmetic_mismatch',
        severity: 'warning',
        ref: { type: 'checkout_intent', id: '65f0c0ffee0000000000000a' },
        details: {
          actual_paid_amount: '10',
          service_fee_amount: '0.1',
          net_income_amount: '9.8',
          expected_net_income_amount: '9.9',
          token: 'USDC',
          chain_id: 8453,
          posted: false,
          waiting_for: 'chain proof of the net amount',
        },
      },
    ]);
  });

  it('error: fee larger than the payment is a fee_arithmetic_mismatch', () => {
    const { entry, findings } = checkoutConfirmed(
      confirmed({ serviceFeeAmount: '11', netIncomeAmount: '0' }),
    );
    expect(entry).toBeNull();
    expect(findings[0]).toMatchObject({
      kind: 'fee_arithmetic_mismatch',
      details: { expected_net_income_amount: '-1' },
    });
  });

  it('behavior: P - F != N with an underpayment reports both findings', () => {
    const { entry, findings } = checkoutConfirmed(
      confirmed({ actualPaidAmount: '9', serviceFeeAmount: '0.09', netIncomeAmount: '9' }),
    );
    expect(entry).toBeNull();
    expect(findings.map((f) => f.kind)).toEqual(['fee_arithmetic_mismatch', 'underpaid']);
  });

  it('behavior: P - F != N with provenNet books the proven net and derives the fee', () => {
    const { entry, findings } = checkoutConfirmed(
      confirmed({ netIncomeAmount: '9.8', provenNet: 9_850_000n }),
    );
    expect(linesByKind(entry)).toEqual({
      'assets:in_transit': 9_850_000n,
      'expense:service_fees': 150_000n,
      'income:sales': -10_000_000n,
    });
    expect(entry!.idempotencyKey).toBe(checkoutConfirmedKey('65f0c0ffee0000000000000a'));
    expect(entry!.metadata).toMatchObject({ net_source: 'chain', net_income_amount: '9.8' });
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      kind: 'fee_arithmetic_mismatch',
      severity: 'warning',
      details: { posted: true, proven_net: '9.85', derived_service_fee: '0.15' },
    });
  });

  it('behavior: provenNet equal to P books no fee line', () => {
    const { entry } = checkoutConfirmed(confirmed({ netIncomeAmount: '9.8', provenNet: 10_000_000n }));
    expect(linesByKind(entry)).toEqual({ 'assets:in_transit': 10_000_000n, 'income:sales': -10_000_000n });
  });

  it('error: provenNet above P books nothing (the fee would be negative)', () => {
    const { entry, findings } = checkoutConfirmed(
      confirmed({ netIncomeAmount: '9.8', provenNet: 10_000_001n }),
    );
    expect(entry).toBeNull();
    expect(findings[0]).toMatchObject({
      kind: 'fee_arithmetic_mismatch',
      details: { posted: false, reason: 'proven net exceeds actual_paid_amount' },
    });
  });

  it('error: negative provenNet throws', () => {
    expect(() => checkoutConfirmed(confirmed({ netIncomeAmount: '9.8', provenNet: -1n }))).toThrow(
      RangeError,
    );
  });

  it('behavior: provenNet is ignored when the reported figures add up', () => {
    const { entry } = checkoutConfirmed(confirmed({ provenNet: 1n }));
    expect(linesByKind(entry)['assets:in_transit']).toBe(9_900_000n);
  });

  it.each([
    ['amountCoins', '10.0000001'],
    ['actualPaidAmount', '10.0000001'],
    ['serviceFeeAmount', '0.1000001'],
    ['netIncomeAmount', '9.8999999'],
  ] as const)('error: over-precise %s for a 6-decimal token throws', (field, value) => {
    expect(() => checkoutConfirmed(confirmed({ [field]: value }))).toThrow(AmountFormatError);
  });

  it('error: over-precise amount for an 18-decimal token throws', () => {
    expect(() =>
      checkoutConfirmed(
        confirmed({
          token: USDT_BNB,
          amountCoins: '1.0000000000000000001',
          actualPaidAmount: '1',
          serviceFeeAmount: '0',
          netIncomeAmount: '1',
        }),
      ),
    ).toThrow(AmountFormatError);
  });

  it('error: a non-decimal amount string throws', () => {
    expect(() => checkoutConfirmed(confirmed({ actualPaidAmount: '-10' }))).toThrow(AmountFormatError);
    expect(() => checkoutConfirmed(confirmed({ actualPaidAmount: '1e1' }))).toThrow(AmountFormatError);
  });

  it('behavior: the same fact gives the same outcome', () => {
    expect(checkoutConfirmed(confirmed({ actualPaidAmount: '9.5', netIncomeAmount: '9.4' }))).toEqual(
      checkoutConfirmed(confirmed({ actualPaidAmount: '9.5', netIncomeAmount: '9.4' })),
    );
  });
});

describe('checkoutTerminalFailure (rule 4)', () => {
  it.each(CHECKOUT_FAILURE_STATUSES)(
    'behavior: status %i without a confirmed entry books nothing',
    (status) => {
      expect(
        checkoutTerminalFailure({ storeId: STORE, intentId: 'i1', status, confirmedEntryPosted: false }),
      ).toEqual({ entry: null, reverse: null, findings: [] });
    },
  );

  it.each(CHECKOUT_FAILURE_STATUSES)('behavior: status %i after a confirmed entry reverses it', (status) => {
    const decision = checkoutTerminalFailure({
      storeId: STORE,
      intentId: 'i1',
      status,
      confirmedEntryPosted: true,
    });
    expect(decision.entry).toBeNull();
    expect(decision.reverse).toBe('checkout:confirmed:i1');
    expect(decision.findings).toEqual([
      {
        kind: 'confirmed_then_failed',
        severity: 'critical',
        ref: { type: 'checkout_intent', id: 'i1' },
        details: { status, status_name: expect.any(String), reversed_entry: 'checkout:confirmed:i1' },
      },
    ]);
  });

  it('behavior: the status name is in the finding', () => {
    const decision = checkoutTerminalFailure({
      storeId: STORE,
      intentId: 'i1',
      status: CheckoutStatus.TIMEOUT,
      confirmedEntryPosted: true,
    });
    expect(decision.findings[0]?.details.status_name).toBe('TIMEOUT');
  });

  it('behavior: a proven payment goes from in_transit to suspense, under a key of the reversed revision', () => {
    const proven = { occurredAt: T0, amounts: [{ token: USDC_BASE, amount: 9_900_000n }] };
    const decision = checkoutTerminalFailure({
      storeId: STORE,
      intentId: 'i1',
      status: CheckoutStatus.CANCELED,
      confirmedEntryPosted: true,
      revision: 2,
      proven,
    });
    expect(decision.reverse).toBe('checkout:confirmed:i1:r2');
    expect(decision.entry).toMatchObject({
      idempotencyKey: 'checkout:proven_reversed:i1:r2',
      kind: 'checkout.proven_reversed',
      occurredAt: T0,
      ref: { type: 'checkout_intent', id: 'i1' },
    });
    expect(linesByKind(decision.entry)).toEqual({
      'assets:in_transit': 9_900_000n,
      'assets:suspense': -9_900_000n,
    });
    expect(isBalanced(decision.entry!.lines)).toBe(true);
    expect(decision.findings.map((f) => [f.kind, f.severity])).toEqual([
      ['confirmed_then_failed', 'critical'],
      ['proven_then_failed', 'critical'],
    ]);
    expect(decision.findings[1]?.details).toMatchObject({
      suspense_entry: 'checkout:proven_reversed:i1:r2',
      proven: [{ amount: '9.9', token: 'USDC', chain_id: 8453 }],
    });
    expect(checkoutProvenReversedKey('i1')).toBe('checkout:proven_reversed:i1');
    // Same fact, same outcome.
    expect(
      checkoutTerminalFailure({
        storeId: STORE,
        intentId: 'i1',
        status: CheckoutStatus.CANCELED,
        confirmedEntryPosted: true,
        revision: 2,
        proven,
      }),
    ).toEqual(decision);
  });

  it('behavior: nothing proven, or no confirmation to reverse, writes no entry', () => {
    const base = { storeId: STORE, intentId: 'i1', status: CheckoutStatus.FAILED } as const;
    const none = { occurredAt: T0, amounts: [] };
    expect(checkoutTerminalFailure({ ...base, confirmedEntryPosted: true, proven: none }).entry).toBeNull();
    const zero = { occurredAt: T0, amounts: [{ token: USDC_BASE, amount: 0n }] };
    expect(checkoutTerminalFailure({ ...base, confirmedEntryPosted: true, proven: zero }).entry).toBeNull();
    const some = { occurredAt: T0, amounts: [{ token: USDC_BASE, amount: 1n }] };
    expect(checkoutTerminalFailure({ ...base, confirmedEntryPosted: false, proven: some })).toEqual({
      entry: null,
      reverse: null,
      findings: [],
    });
    const negative = { occurredAt: T0, amounts: [{ token: USDC_BASE, amount: -1n }] };
    expect(() => checkoutTerminalFailure({ ...base, confirmedEntryPosted: true, proven: negative })).toThrow(
      RangeError,
    );
  });

  it.each([CheckoutStatus.CONFIRMED, CheckoutStatus.SEND_BACK, CheckoutStatus.ON_CHAIN])(
    'error: non-failure status %i throws',
    (status) => {
      expect(() =>
        checkoutTerminalFailure({
          storeId: STORE,
          intentId: 'i1',
          status: status as unknown as CheckoutFailureStatus,
          confirmedEntryPosted: false,
        }),
      ).toThrow(RangeError);
    },
  );
});
