import { describe, expect, it } from 'vitest';
import {
  CheckoutStatus,
  checkoutStatusName,
  checkoutStatusSchema,
  isTerminalCheckoutStatus,
} from '../../../../src/svc/models/checkoutStatus.ts';
import {
  CLAIM_LINK_STATUSES,
  claimLinkStatusSchema,
  isTerminalClaimLinkStatus,
} from '../../../../src/svc/models/claimLinkStatus.ts';
import {
  PaymentMethodType,
  paymentMethodTypeName,
  paymentMethodTypeSchema,
} from '../../../../src/svc/models/paymentMethodType.ts';

describe('PaymentMethodType', () => {
  it('behavior: values and names', () => {
    expect([0, 1, 2, 3].map((v) => paymentMethodTypeSchema.parse(v))).toEqual([0, 1, 2, 3]);
    expect(paymentMethodTypeName(PaymentMethodType.WALLET_CONNECT)).toBe('WALLET_CONNECT');
    expect(paymentMethodTypeName(3)).toBe('ALL_SVC_PAY');
  });

  it.each([4, -1, '1', null])('error: rejects %j', (v) => {
    expect(paymentMethodTypeSchema.safeParse(v).success).toBe(false);
  });
});

describe('CheckoutStatus', () => {
  it.each([
    [-1, 'FAILED', true],
    [-2, 'REJECTED', true],
    [-3, 'UNDERPAID', true],
    [-4, 'CANCELED', true],
    [-5, 'TIMEOUT', true],
    [1, 'CREATED', false],
    [2, 'VIEWED', false],
    [3, 'TEMP_WALLET_RECEIVED', false],
    [4, 'MANUAL_OPERATION', false],
    [5, 'SEND_BACK', false],
    [10, 'ON_CHAIN', false],
    [20, 'CONFIRMED', true],
  ] as const)('behavior: %i is %s, terminal %s', (value, name, terminal) => {
    const status = checkoutStatusSchema.parse(value);
    expect(checkoutStatusName(status)).toBe(name);
    expect(isTerminalCheckoutStatus(status)).toBe(terminal);
    expect(CheckoutStatus[name]).toBe(value);
  });

  it.each([0, -6, 6, 9, 11, 19, 21, 30, 1.5, '20', 'CONFIRMED', null])('error: rejects %j', (v) => {
    expect(checkoutStatusSchema.safeParse(v).success).toBe(false);
  });
});

describe('ClaimLinkStatus', () => {
  it('behavior: six statuses, three terminal', () => {
    expect(CLAIM_LINK_STATUSES.map((s) => claimLinkStatusSchema.parse(s))).toEqual([...CLAIM_LINK_STATUSES]);
    expect(CLAIM_LINK_STATUSES.filter(isTerminalClaimLinkStatus)).toEqual([
      'claimed',
      'expired',
      'cancelled',
    ]);
  });

  it.each(['canceled', 'CLAIMED', 'refund_pending', '', 1])('error: rejects %j', (v) => {
    expect(claimLinkStatusSchema.safeParse(v).success).toBe(false);
  });
});
