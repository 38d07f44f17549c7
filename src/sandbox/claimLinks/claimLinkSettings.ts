import { z } from 'zod';
import { DECIMAL_STRING_RE, parseDecimalAmount } from '../../money/decimalAmount.ts';

/**
 * The knobs of the simulated claim-link service: how long its deposit scanner takes to confirm a
 * funding, how long a refund takes to settle, the funding fee and the expiry. All durations are on
 * the sandbox clock. Set at start (createClaimLinkEngine options) or later through
 * POST /_sandbox/claim_links/config.
 *
 * Funding fee: fee = fixed + ceil(amount * bps / 10000), in token base units. The custody wallet
 * pays amount + fee in one transfer to the pool; the pool then pays the fee to the service's fee
 * wallet, so the pool holds the principal. Fees settled at funding are never refunded.
 */
export const claimLinkSettingsSchema = z
  .object({
    /** Sandbox milliseconds from funding until the link moves pending_deposit -> link_sent. */
    scanner_delay_ms: z.int().min(0),
    /** Sandbox milliseconds from cancel until the refund transfer (and then the cancelled webhook). */
    refund_delay_ms: z.int().min(0),
    /** Sandbox milliseconds from funding until an unclaimed link expires (the spec's 14 days). */
    expiry_ms: z.int().min(1),
    funding_fee: z
      .object({
        /** A fixed fee in coin units, at most 6 decimals so it fits every chain's token. */
        fixed: z
          .string()
          .regex(DECIMAL_STRING_RE, { error: 'must be a decimal string such as "0.5"' })
          .refine((s) => (s.split('.')[1] ?? '').length <= 6, { error: 'at most 6 decimals' }),
        /** A rate in basis points of the amount, rounded up to a base unit. */
        bps: z.int().min(0).max(10_000),
      })
      .strict(),
  })
  .strict();
export type ClaimLinkSettings = z.output<typeof claimLinkSettingsSchema>;

export const DEFAULT_CLAIM_LINK_SETTINGS: ClaimLinkSettings = {
  scanner_delay_ms: 2_000,
  refund_delay_ms: 5_000,
  expiry_ms: 14 * 24 * 60 * 60 * 1000,
  funding_fee: { fixed: '0.5', bps: 0 },
};

/** A partial update, as POST /_sandbox/claim_links/config takes it. */
export const claimLinkSettingsPatchSchema = z
  .object({
    scanner_delay_ms: claimLinkSettingsSchema.shape.scanner_delay_ms.optional(),
    refund_delay_ms: claimLinkSettingsSchema.shape.refund_delay_ms.optional(),
    expiry_ms: claimLinkSettingsSchema.shape.expiry_ms.optional(),
    funding_fee: claimLinkSettingsSchema.shape.funding_fee.partial().strict().optional(),
  })
  .strict();
export type ClaimLinkSettingsPatch = z.output<typeof claimLinkSettingsPatchSchema>;

export function applySettingsPatch(
  settings: ClaimLinkSettings,
  patch: ClaimLinkSettingsPatch,
): ClaimLinkSettings {
  return {
    scanner_delay_ms: patch.scanner_delay_ms ?? settings.scanner_delay_ms,
    refund_delay_ms: patch.refund_delay_ms ?? settings.refund_delay_ms,
    expiry_ms: patch.expiry_ms ?? settings.expiry_ms,
    funding_fee: { ...settings.funding_fee, ...patch.funding_fee },
  };
}

/** Fee in base units for a principal of `amount` base units on a token of `decimals`. */
export function fundingFeeUnits(settings: ClaimLinkSettings, amount: bigint, decimals: number): bigint {
  const fixed = parseDecimalAmount(settings.funding_fee.fixed, decimals);
  const bps = BigInt(settings.funding_fee.bps);
  const rate = (amount * bps + 9_999n) / 10_000n;
  return fixed + rate;
}
