/**
 * Checkout webhook: the body the service POSTs to the merchant when an intent settles. Optional
 * fields read as null when absent. amount_cents and amount_coins are the requested amount;
 * actual_paid_amount is what the buyer sent (gross, before any platform fee).
 */
import { z } from 'zod';
import { centsSchema, decimalStringSchema } from './amounts.ts';
import { CheckoutStatus } from './checkoutStatus.ts';
import { reportedCurrencySchema } from './currency.ts';
import { addressSchema, eip155ChainIdSchema, txHashSchema } from './onChain.ts';
import { paymentMethodTypeSchema } from './paymentMethodType.ts';
import { stableCoinSymbolSchema } from './stableCoin.ts';

const optionalText = z.string().nullable().default(null);

export const checkoutWebhookPayloadSchema = z.object({
  all_svc_transaction_id: z.string().min(1),
  /** At most 200 characters, as the client asks about (an ObjectId has 24). */
  all_svc_checkout_intent_id: z.string().min(1).max(200),
  /** Equals the X-Webhook-Id header; the idempotency key of the delivery. */
  webhook_id: z.string().min(1),
  amount_cents: centsSchema,
  currency: reportedCurrencySchema.nullable().default(null),
  currency_symbol: optionalText,
  amount_coins: decimalStringSchema,
  coin_contract_address: addressSchema,
  coin_symbol: stableCoinSymbolSchema,
  chain_id: eip155ChainIdSchema,
  tx_hash: txHashSchema,
  tx_from: addressSchema,
  payment_method_type: paymentMethodTypeSchema,
  user_id: optionalText,
  order_id: optionalText,
  user_name: optionalText,
  extra_obj: z.record(z.string(), z.unknown()).nullable().default(null),
  // A plain integer, not the status enum: any value but 20 means not paid, known or not.
  status: z.int().nullable().default(null),
  actual_paid_amount: decimalStringSchema.nullable().default(null),
});
export type CheckoutWebhookPayload = z.output<typeof checkoutWebhookPayloadSchema>;

/**
 * Paid only at CONFIRMED (20). A null status predates the field, so it counts as paid only when
 * replaying historical callbacks; a live callback without it proves nothing.
 */
export function isPaidWebhook(
  payload: Pick<CheckoutWebhookPayload, 'status'>,
  options: { historical?: boolean } = {},
): boolean {
  if (payload.status === null) return options.historical === true;
  return payload.status === CheckoutStatus.CONFIRMED;
}
