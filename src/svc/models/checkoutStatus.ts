/**
 * Checkout intent status. Negative values are failures; CONFIRMED (20) is the one paid outcome.
 * A terminal status never changes again, so polling of that intent can stop.
 */
import { z } from 'zod';

export const CheckoutStatus = {
  FAILED: -1,
  REJECTED: -2,
  UNDERPAID: -3,
  CANCELED: -4,
  TIMEOUT: -5,
  CREATED: 1,
  VIEWED: 2,
  TEMP_WALLET_RECEIVED: 3,
  MANUAL_OPERATION: 4,
  SEND_BACK: 5,
  ON_CHAIN: 10,
  CONFIRMED: 20,
} as const;
export type CheckoutStatus = (typeof CheckoutStatus)[keyof typeof CheckoutStatus];
export type CheckoutStatusName = keyof typeof CheckoutStatus;

export const checkoutStatusSchema = z.enum(CheckoutStatus, {
  error: 'must be a checkout status integer: -5..-1, 1..5, 10 or 20',
});

const NAMES = new Map<number, CheckoutStatusName>(
  Object.entries(CheckoutStatus).map(([name, value]) => [value, name as CheckoutStatusName]),
);

const TERMINAL: ReadonlySet<CheckoutStatus> = new Set([
  CheckoutStatus.FAILED,
  CheckoutStatus.REJECTED,
  CheckoutStatus.UNDERPAID,
  CheckoutStatus.CANCELED,
  CheckoutStatus.TIMEOUT,
  CheckoutStatus.CONFIRMED,
]);

export function isTerminalCheckoutStatus(status: CheckoutStatus): boolean {
  return TERMINAL.has(status);
}

export function checkoutStatusName(status: CheckoutStatus): CheckoutStatusName {
  const name = NAMES.get(status);
  if (name === undefined) throw new RangeError(`unknown checkout status ${status}`);
  return name;
}
