import { sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';
import { storableExcerpt } from '../db/storableJson.ts';
import { applyClaimLinkWebhook } from '../payouts/applyClaimLinkWebhook.ts';
import type { InboxOutcome } from './inboxOutcome.ts';
import { resolveWebhookFailureFindings } from './markWebhooksProcessed.ts';

/**
 * How long a claim-link webhook that names its link only by refund_tx_hash waits for the chain
 * side to see that refund: the row stays `received` (its error says why) and the inbox sweeper
 * processes it again every 30 s, until it is matched, or it was received longer than `ms` ago by
 * the database's clock, or it has had `attempts` attempts; then it fails with
 * `webhook_for_unknown_claim_link`, for a person (and `webhooks replay`). A replay of such a
 * failed row is past both bounds, so it applies if the refund is known by then and fails again at
 * once if not.
 */
export const REFUND_WEBHOOK_WAIT = { ms: 60 * 60_000, attempts: 150 } as const;

/**
 * A stored claim-link `cancelled` webhook: applied through the payouts (applyClaimLinkWebhook) and
 * its inbox row marked, in one transaction under the row's lock, so a repeat finds it processed.
 * A webhook that names its link only by a refund the chain side has not seen yet stays
 * `received` (REFUND_WEBHOOK_WAIT).
 */
export async function processClaimLinkWebhook(
  deps: DomainContext,
  webhook: { webhookId: string; storeId: string; body: unknown },
): Promise<InboxOutcome> {
  return deps.db.transaction(async (tx): Promise<InboxOutcome> => {
    const locked = await tx.execute<{ status: string; may_wait: boolean }>(sql`
      select status,
             attempts + 1 < ${REFUND_WEBHOOK_WAIT.attempts}
               and received_at > now() - ${REFUND_WEBHOOK_WAIT.ms} * interval '1 millisecond' as may_wait
      from webhook_inbox where webhook_id = ${webhook.webhookId} for update`);
    const lockedRow = locked.rows[0];
    if (lockedRow?.status !== 'received') return { kind: 'already_done' };
    const outcome = await applyClaimLinkWebhook(tx, deps, {
      storeId: webhook.storeId,
      webhookId: webhook.webhookId,
      body: webhook.body,
      mayWait: lockedRow.may_wait,
    });
    if (outcome.kind === 'waiting') {
      // Stays `received`: the inbox sweeper adds its job again.
      await tx.execute(sql`
        update webhook_inbox set attempts = attempts + 1, error = ${storableExcerpt(outcome.reason)}
        where webhook_id = ${webhook.webhookId}`);
      deps.logger.info(
        { webhookId: webhook.webhookId, reason: outcome.reason },
        'claim-link webhook waits for its refund',
      );
      return outcome;
    }
    const failed = outcome.kind === 'unusable';
    if (!failed) await resolveWebhookFailureFindings(tx, webhook.webhookId);
    await tx.execute(sql`
      update webhook_inbox set status = ${failed ? 'failed' : 'processed'}, processed_at = now(),
             attempts = attempts + 1, error = ${failed ? outcome.reason : null},
             ref_id = ${outcome.kind === 'applied' ? outcome.claimLinkId : null}
      where webhook_id = ${webhook.webhookId}`);
    return outcome.kind === 'applied'
      ? { kind: 'claim_link_applied', claimLinkId: outcome.claimLinkId, storeId: webhook.storeId }
      : outcome;
  });
}
