/** PaymentMethodType: how the buyer paid a checkout intent (scanned, connected wallet, or the service's own pay app). */
import { z } from 'zod';

export const PaymentMethodType = { UNKNOWN: 0, WALLET_SCAN: 1, WALLET_CONNECT: 2, ALL_SVC_PAY: 3 } as const;
export type PaymentMethodType = (typeof PaymentMethodType)[keyof typeof PaymentMethodType];
export type PaymentMethodTypeName = keyof typeof PaymentMethodType;

export const paymentMethodTypeSchema = z.enum(PaymentMethodType, {
  error: 'must be a PaymentMethodType integer: 0, 1, 2 or 3',
});

const NAMES = new Map<number, PaymentMethodTypeName>(
  Object.entries(PaymentMethodType).map(([name, value]) => [value, name as PaymentMethodTypeName]),
);

export function paymentMethodTypeName(value: PaymentMethodType): PaymentMethodTypeName {
  const name = NAMES.get(value);
  if (name === undefined) throw new RangeError(`unknown PaymentMethodType ${value}`);
  return name;
}
