/**
 * Claim link status, the one enum the service sends as a string. claimed, expired and cancelled
 * are terminal: the funds have left the link (to the recipient or back to the merchant) for good.
 */
import { z } from 'zod';

export const CLAIM_LINK_STATUSES = [
  'pending_deposit',
  'link_sent',
  'claiming',
  'claimed',
  'expired',
  'cancelled',
] as const;
export type ClaimLinkStatus = (typeof CLAIM_LINK_STATUSES)[number];

export const claimLinkStatusSchema = z.enum(CLAIM_LINK_STATUSES, {
  error: `must be a claim link status: ${CLAIM_LINK_STATUSES.join(', ')}`,
});

const TERMINAL: ReadonlySet<ClaimLinkStatus> = new Set(['claimed', 'expired', 'cancelled']);

export function isTerminalClaimLinkStatus(status: ClaimLinkStatus): boolean {
  return TERMINAL.has(status);
}
