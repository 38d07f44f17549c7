/**
 * Claim link (auto-payout): a bearer link the merchant creates and funds in one call, then hands to
 * a recipient. Here: the create request and result, the cancel result and the cancelled webhook.
 * The create result's token is a secret returned once; keep it out of logs.
 */
import { z } from 'zod';
import { decimalStringSchema } from './amounts.ts';
import { claimLinkStatusSchema } from './claimLinkStatus.ts';
import { eip155ChainIdSchema, txHashSchema } from './onChain.ts';
import { serviceChainSchema } from './serviceChain.ts';
import { stableCoinSchema } from './stableCoin.ts';

/** 1 to 128 printable ASCII characters, no spaces or control characters. */
export const REFERENCE_ID_RE = /^[\x21-\x7e]{1,128}$/;

export const referenceIdSchema = z.string().regex(REFERENCE_ID_RE, {
  error: 'reference_id must be 1 to 128 printable ASCII characters without spaces',
});

function optionalTextUpTo(max: number, field: string) {
  return z
    .string()
    .max(max, { error: `${field} must be at most ${max} characters` })
    .nullable()
    .optional();
}

export const createClaimLinkRequestSchema = z.object({
  /** Token units; its precision against the token's decimals is checked where decimals are known. */
  amount: decimalStringSchema.refine((a) => /[1-9]/.test(a), { error: 'amount must be greater than 0' }),
  stable_coin: stableCoinSchema,
  /** The service's Chain enum, not an EIP-155 id: see src/svc/models/serviceChain.ts. */
  chain: serviceChainSchema,
  receiver_email: optionalTextUpTo(254, 'receiver_email'),
  sender_display_name: optionalTextUpTo(100, 'sender_display_name'),
  sender_message: optionalTextUpTo(500, 'sender_message'),
  reference_id: referenceIdSchema,
});
export type CreateClaimLinkRequest = z.output<typeof createClaimLinkRequestSchema>;

export const createClaimLinkResultSchema = z.object({
  claim_link_id: z.string().min(1),
  reference_id: z.string().nullable(),
  amount: decimalStringSchema,
  token_symbol: z.string().min(1),
  /** EIP-155, unlike the request's `chain`. */
  chain_id: eip155ChainIdSchema,
  status: claimLinkStatusSchema,
  /** Null on an idempotent replay, as are funding_tx_hash and funded_amount. */
  token: z.string().nullable(),
  claim_url: z.string().nullable(),
  funding_tx_hash: txHashSchema.nullable(),
  /** Principal funded by this call, fees excluded. */
  funded_amount: decimalStringSchema.nullable(),
  idempotent_hit: z.boolean(),
});
export type CreateClaimLinkResult = z.output<typeof createClaimLinkResultSchema>;

export const cancelClaimLinkResultSchema = z.object({
  claim_link_id: z.string().min(1),
  reference_id: z.string().nullable(),
  status: z.literal('cancelled'),
  /** The refund settles later; the cancelled webhook reports it. */
  refund_status: z.literal('refund_pending'),
});
export type CancelClaimLinkResult = z.output<typeof cancelClaimLinkResultSchema>;

/** Only refund_tx_hash is documented; everything else is kept as sent for the raw fact. */
export const claimLinkCancelledWebhookPayloadSchema = z.looseObject({
  refund_tx_hash: txHashSchema,
});
export type ClaimLinkCancelledWebhookPayload = z.output<typeof claimLinkCancelledWebhookPayloadSchema>;
