/**
 * Checkout intent: one payment a merchant asks a buyer for, priced either in fiat (converted to a
 * stable coin at the service's rate) or natively in a stable coin. Here: the create request and
 * result, the full intent (GET .../{id}) and the bare status (GET .../{id}/status).
 */
import { z } from 'zod';
import { centsSchema, decimalStringSchema, requestCentsSchema } from './amounts.ts';
import { checkoutStatusSchema } from './checkoutStatus.ts';
import { currencySchema, reportedCurrencySchema } from './currency.ts';
import { addressSchema, eip155ChainIdSchema, txHashSchema } from './onChain.ts';
import { paymentMethodTypeSchema } from './paymentMethodType.ts';
import { stableCoinFlagsSchema, stableCoinSchema, stableCoinSymbolSchema } from './stableCoin.ts';

const optionalText = z.string().nullable().optional();

export const createCheckoutIntentRequestSchema = z
  .object({
    currency: currencySchema.nullable().optional(),
    stable_coin: stableCoinSchema.nullable().optional(),
    /** Fiat cents with currency, stable-coin cents (100 = 1.00 coin) with stable_coin. */
    amount_cents: requestCentsSchema,
    order_id: optionalText,
    redirect_url: optionalText,
    order_description: optionalText,
    user_id: optionalText,
    user_name: optionalText,
    extra: z.record(z.string(), z.unknown()).nullable().optional(),
    /** The first entry picks the settlement coin of a fiat-priced intent. */
    accepted_stable_coins: z
      .array(stableCoinSchema)
      .min(1, { error: 'accepted_stable_coins must list at least one coin when given' })
      .nullable()
      .optional(),
  })
  .superRefine((req, ctx) => {
    const hasCurrency = req.currency != null;
    const hasCoin = req.stable_coin != null;
    if (hasCurrency === hasCoin) {
      ctx.addIssue({
        code: 'custom',
        message:
          `set exactly one of currency (fiat pricing) or stable_coin (native stable-coin pricing); ` +
          `got ${hasCurrency ? 'both' : 'neither'}`,
      });
    }
  });
export type CreateCheckoutIntentRequest = z.output<typeof createCheckoutIntentRequestSchema>;

export const createCheckoutIntentResultSchema = z.object({
  checkout_url: z.url(),
  // Spelled without the underscore in this response only, as the service sends it.
  allsvc_checkout_intent_id: z.string().min(1),
  amount_coins: decimalStringSchema,
  stable_coin_type: stableCoinSchema,
  rate: decimalStringSchema.nullable(),
  accepted_stable_coins: stableCoinFlagsSchema.nullable(),
});
export type CreateCheckoutIntentResult = z.output<typeof createCheckoutIntentResultSchema>;

export const checkoutIntentSchema = z.object({
  /** At most 200 characters, as the client asks about (an ObjectId has 24); it keys our rows. */
  all_svc_checkout_intent_id: z.string().min(1).max(200),
  /** currency, currency_symbol, amount_cents and currency_rate are null when priced in a stable coin. */
  currency: reportedCurrencySchema.nullable(),
  currency_symbol: z.string().nullable(),
  amount_cents: centsSchema.nullable(),
  chain_id: eip155ChainIdSchema.nullable(),
  amount_coins: decimalStringSchema,
  coin_symbol: stableCoinSymbolSchema,
  coin_contract: addressSchema.nullable(),
  currency_rate: decimalStringSchema.nullable(),
  status: checkoutStatusSchema,
  order_id: z.string().nullable(),
  order_description: z.string().nullable(),
  user_id: z.string().nullable(),
  user_name: z.string().nullable(),
  // The spec's own example omits error_message and tx_hash_2, so absent reads as null.
  error_message: z.string().nullable().default(null),
  /** Buyer wallet -> ephemeral wallet. */
  tx_hash: txHashSchema.nullable(),
  /** Ephemeral wallet -> merchant wallet, when the payment went through one. */
  tx_hash_2: txHashSchema.nullable().default(null),
  tx_from: addressSchema.nullable(),
  tx_to: addressSchema,
  actual_paid_amount: decimalStringSchema.nullable(),
  service_fee_amount: decimalStringSchema.nullable(),
  /** actual_paid_amount minus service_fee_amount: what the merchant is credited. */
  net_income_amount: decimalStringSchema.nullable(),
  payment_method_type: paymentMethodTypeSchema,
  /** null on intents created before multi-coin support. */
  accepted_stable_coins: stableCoinFlagsSchema.nullable(),
});
export type CheckoutIntent = z.output<typeof checkoutIntentSchema>;

/** GET .../{id}/status answers a bare integer, not an object. */
export const checkoutIntentStatusPayloadSchema = checkoutStatusSchema;
export type CheckoutIntentStatusPayload = z.output<typeof checkoutIntentStatusPayloadSchema>;
