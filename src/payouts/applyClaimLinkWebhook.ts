import { sql } from 'drizzle-orm';
import { z } from 'zod';
import type { DomainContext } from '../context/domainContext.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import { claimLinkCancelledWebhookPayloadSchema } from '../svc/models/claimLink.ts';
import { markCancelled } from './closeLink.ts';
import { findPayout } from './payoutRecord.ts';

/**
 * The claim-link cancelled webhook (spec "Claim-link cancelled webhook"): the refund of a cancelled
 * link succeeded on chain. We record its refund_tx_hash on the payout, and a link our books did
 * not know as cancelled (cancelled elsewhere, or our cancel's answer was lost) becomes cancelled
 * with rule 7. The refund itself (rule 8) is booked when the chain proves the transfer final.
 *
 * The spec documents only refund_tx_hash and the event kind `cancelled` (the only kind it
 * defines), and shows no other field: a body without an event name is that event. The link is
 * found by claim_link_id, else by the store's reference_id, else by refund_tx_hash (the refund our
 * chain side recorded on the payout, or an indexed transfer of that transaction from the link's
 * pool back to the custody wallet that funded it). A body that names the link only by its refund
 * may arrive before the indexer has read that transfer: the caller then lets it wait (`waiting`)
 * instead of failing it, for a bounded time.
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
  /**
   * Whether a body that names its link only by refund_tx_hash, and matches no link yet, may wait
   * for the chain side (outcome `waiting`, no finding) rather than fail. The caller bounds it.
   */
  mayWait?: boolean;
}

export type ClaimLinkWebhookOutcome =
  | { kind: 'applied'; payoutId: string; claimLinkId: string; newlyCancelled: boolean }
  /** Not applied yet: its refund is not known to our chain side; nothing written. */
  | { kind: 'waiting'; reason: string }
  | { kind: 'unusable'; reason: string };

/**
 * The event name of a claim-link webhook body (`event`, or `kind`). An object without one is
 * `cancelled`: the spec's only claim-link event, whose payload shows refund_tx_hash and nothing
 * else. Not an object: 'unknown'.
 */
export function claimLinkEventOf(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'unknown';
  const named = 'event' in body ? body.event : 'kind' in body ? body.kind : undefined;
  if (named === undefined || named === null || named === '') return 'cancelled';
  return typeof named === 'string' ? named : 'unknown';
}

/** Applies a `cancelled` webhook inside the caller's transaction; findings for what cannot be applied. */
export async function applyClaimLinkWebhook(
  tx: DbExecutor,
  deps: Pick<DomainContext, 'chains' | 'accounts' | 'clock' | 'logger'>,
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

  const refundTxHash = body.refund_tx_hash.toLowerCase();
  const byLink = body.claim_link_id ? await findPayout(tx, { claimLinkId: body.claim_link_id }) : undefined;
  const byReference =
    !byLink && body.reference_id
      ? await findPayout(tx, { storeId: webhook.storeId, referenceId: body.reference_id })
      : undefined;
  const byRefund =
    !byLink && !byReference ? await findPayoutByRefund(tx, deps, webhook.storeId, refundTxHash) : undefined;
  const payout = byLink ?? byReference ?? byRefund;
  const namesLink = Boolean(body.claim_link_id || body.reference_id);
  if (!payout && !namesLink && webhook.mayWait) {
    // Only the refund names the link, and our chain side has not seen it yet: the indexer reads
    // that transfer within moments of the service's webhook, so the caller tries again.
    return {
      kind: 'waiting',
      reason: `no claim link of store ${webhook.storeId} is known by refund_tx_hash ${refundTxHash} yet; waiting for the chain side to see the refund`,
    };
  }
  const otherLink = payout?.claimLinkId && body.claim_link_id && payout.claimLinkId !== body.claim_link_id;
  if (
    !payout?.claimLinkId ||
    payout.storeId !== webhook.storeId ||
    payout.createOutcome !== 'created' ||
    otherLink
  ) {
    const reason = otherLink
      ? `the webhook names claim link ${body.claim_link_id}, but its reference_id is that of payout ${payout.id} (claim link ${payout.claimLinkId})`
      : payout
        ? `claim link of payout ${payout.id} is not a created link of store ${webhook.storeId}`
        : namesLink
          ? `no payout of store ${webhook.storeId} has claim link ${body.claim_link_id ?? '(none given)'}`
          : `no claim link of store ${webhook.storeId} is known by refund_tx_hash ${refundTxHash}`;
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

  // A refund paid in pieces has one transaction per piece: the webhook may name any of them.
  if (
    payout.refundTxHash &&
    payout.refundTxHash !== refundTxHash &&
    (await findPayoutByRefund(tx, deps, webhook.storeId, refundTxHash))?.id !== payout.id
  ) {
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
    update payouts set refund_tx_hash = coalesce(refund_tx_hash, ${refundTxHash}), updated_at = greatest(updated_at, now())
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
    {
      payoutId: payout.id,
      claimLinkId: payout.claimLinkId,
      newlyCancelled: closed.newlyCancelled,
      foundBy: byLink ? 'claim_link_id' : byReference ? 'reference_id' : 'refund_tx_hash',
    },
    'claim-link cancelled webhook applied',
  );
  return {
    kind: 'applied',
    payoutId: payout.id,
    claimLinkId: payout.claimLinkId,
    newlyCancelled: closed.newlyCancelled,
  };
}

/**
 * The created payout of `storeId` whose refund is the transaction `refundTxHash` (lowercase), or
 * undefined when none or more than one matches. Its refund_tx_hash as our chain side recorded it
 * (set once the refund is final and booked); else an indexed transfer of that transaction, not
 * orphaned, final or not, out of a link's pool (chain_watched_wallets, learnt from its funding)
 * back to the address that funded the pool (custody: pools are learnt only from custody
 * outflows). A transfer from the pool to anyone else is a claim or the service's fee sweep,
 * never a refund. chain_transfers is read through its (chain_id, tx_hash) index, for the chains
 * of the registry.
 */
async function findPayoutByRefund(
  tx: DbExecutor,
  deps: Pick<DomainContext, 'chains'>,
  storeId: string,
  refundTxHash: string,
) {
  const chainIds = deps.chains.chains().map((c) => c.chainId);
  const { rows } = await tx.execute<{ id: string }>(sql`
    select distinct id from (
      select p.id from payouts p
      where p.store_id = ${storeId} and p.claim_link_id is not null and lower(p.refund_tx_hash) = ${refundTxHash}
      union all
      select p.id from chain_transfers t
      join chain_watched_wallets w on w.chain_id = t.chain_id and w.address = t.from_address
      join payouts p on p.claim_link_id = w.claim_link_id and p.chain_id = t.chain_id
      where t.chain_id = any(${sql.param(chainIds)}::bigint[]) and t.tx_hash = ${refundTxHash}
        and t.state <> 'orphaned' and t.value > 0 and p.store_id = ${storeId}
        and exists (
          select 1 from chain_transfers f
          where f.chain_id = t.chain_id and f.from_address = t.to_address and f.to_address = t.from_address
            and f.state <> 'orphaned' and f.matched_ref = p.claim_link_id and f.matched_as like 'claim_link_funding%')
    ) found
    limit 2`);
  const only = rows.length === 1 ? rows[0] : undefined;
  return only ? findPayout(tx, { id: only.id }) : undefined;
}
