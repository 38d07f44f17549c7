import { sql } from 'drizzle-orm';
import { z } from 'zod';
import type { DbExecutor } from '../db/database.ts';
import type { PaymentsDeps } from '../payments/paymentsDeps.ts';
import { recordFinding, resolveFinding } from '../recon/recordFinding.ts';
import { claimLinkCancelledWebhookPayloadSchema } from '../svc/models/claimLink.ts';
import { markCancelled } from './closeLink.ts';
import { findPayout } from './payoutRecord.ts';

/**
 * The claim-link cancelled webhook (spec "Claim-link cancelled webhook"): the refund of a cancelled
 * link succeeded on chain. We record its refund_tx_hash on the payout, and a link our books did
 * not know as cancelled (cancelled elsewhere, or our cancel's answer was lost) becomes cancelled
 * with rule 7. The refund itself (rule 8) is booked when the chain proves the transfer final.
 *
 * The spec documents only refund_tx_hash; the link is found by claim_link_id (which the service
 * sends), else by the store's reference_id.
 */
export const claimLinkWebhookSchema = claimLinkCancelledWebhookPayloadSchema.extend({
  event: z.string().optional(),
  kind: z.string().optional(),
  claim_link_id: z.string().min(1).optional(),
  reference_id: z.string().min(1).nullable().optional(),
});

export interface ClaimLinkWebhook {
  storeId: string;
  webhookId: string;
  /** The parsed JSON body, as stored in the inbox. */
  body: unknown;
}

export type ClaimLinkWebhookOutcome =
  | { kind: 'applied'; payoutId: string; claimLinkId: string; newlyCancelled: boolean }
  | { kind: 'unusable'; reason: string };

/** The event name of a claim-link webhook body (`event`, or `kind`), or 'unknown'. */
export function claimLinkEventOf(body: unknown): string {
  if (typeof body !== 'object' || body === null) return 'unknown';
  const named = 'event' in body ? body.event : 'kind' in body ? body.kind : undefined;
  return typeof named === 'string' && named ? named : 'unknown';
}

/** Applies a `cancelled` webhook inside the caller's transaction; findings for what cannot be applied. */
export async function applyClaimLinkWebhook(
  tx: DbExecutor,
  deps: Pick<PaymentsDeps, 'chains' | 'accounts' | 'clock' | 'logger'>,
  webhook: ClaimLinkWebhook,
): Promise<ClaimLinkWebhookOutcome> {
  const webhookRef = { type: 'webhook', id: webhook.webhookId };
  const parsed = claimLinkWebhookSchema.safeParse(webhook.body);
  if (!parsed.success) {
    const reason = parsed.error.issues
      .map((i) => `${i.path.join('.')}: ${i.message}`)
      .slice(0, 3)
      .join('; ');
    await recordFinding(
      tx,
      { kind: 'malformed_webhook', severity: 'warning', ref: webhookRef, details: { reason } },
      webhook.storeId,
    );
    return { kind: 'unusable', reason };
  }
  const body = parsed.data;
  const event = claimLinkEventOf(body);
  if (event !== 'cancelled') throw new Error(`applyClaimLinkWebhook: event ${event} is not cancelled`);

  const byLink = body.claim_link_id ? await findPayout(tx, { claimLinkId: body.claim_link_id }) : undefined;
  const payout =
    byLink ??
    (body.reference_id
      ? await findPayout(tx, { storeId: webhook.storeId, referenceId: body.reference_id })
      : undefined);
  if (!payout?.claimLinkId || payout.storeId !== webhook.storeId || payout.createOutcome !== 'created') {
    const reason = payout
      ? `claim link of payout ${payout.id} is not a created link of store ${webhook.storeId}`
      : `no payout of store ${webhook.storeId} has claim link ${body.claim_link_id ?? '(none given)'}`;
    await recordFinding(
      tx,
      {
        kind: 'webhook_for_unknown_claim_link',
        severity: 'warning',
        ref: body.claim_link_id ? { type: 'claim_link', id: body.claim_link_id } : webhookRef,
        details: {
          webhook_id: webhook.webhookId,
          event,
          claim_link_id: body.claim_link_id ?? null,
          reference_id: body.reference_id ?? null,
          refund_tx_hash: body.refund_tx_hash,
        },
      },
      webhook.storeId,
    );
    return { kind: 'unusable', reason };
  }

  const refundTxHash = body.refund_tx_hash.toLowerCase();
  if (payout.refundTxHash && payout.refundTxHash !== refundTxHash) {
    await recordFinding(
      tx,
      {
        kind: 'refund_tx_hash_mismatch',
        severity: 'warning',
        ref: { type: 'claim_link', id: payout.claimLinkId },
        details: { payout_id: payout.id, recorded: payout.refundTxHash, webhook: refundTxHash },
      },
      payout.storeId,
    );
  }
  await tx.execute(sql`
    update payouts set refund_tx_hash = coalesce(refund_tx_hash, ${refundTxHash}), updated_at = now()
    where id = ${payout.id}`);
  const closed = await markCancelled(tx, deps, payout.id, 'webhook');
  // An earlier webhook for this link, read before the link was known, raised this finding.
  await resolveFinding(tx, 'webhook_for_unknown_claim_link', { type: 'claim_link', id: payout.claimLinkId });
  if (closed.newlyCancelled) {
    // The same finding the chain side writes when a refund shows up for a link we did not cancel.
    await recordFinding(
      tx,
      {
        kind: 'cancelled_outside_stablebooks',
        severity: 'info',
        ref: { type: 'claim_link', id: payout.claimLinkId },
        details: {
          refund_tx_hash: refundTxHash,
          what: 'a cancelled webhook arrived for a link stablebooks did not cancel',
        },
      },
      payout.storeId,
    );
  }
  deps.logger.info(
    { payoutId: payout.id, claimLinkId: payout.claimLinkId, newlyCancelled: closed.newlyCancelled },
    'claim-link cancelled webhook applied',
  );
  return {
    kind: 'applied',
    payoutId: payout.id,
    claimLinkId: payout.claimLinkId,
    newlyCancelled: closed.newlyCancelled,
  };
}
