import { sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';
import type { Severity } from '../findings/finding.ts';
import { type EntryView, entryView, listEntries } from '../ledger/listEntries.ts';
import { claimLinkExpiresAt } from '../ledger/rules/claimLinkRules.ts';
import { addSecretValue } from '../logging/logger.ts';
import { PayoutNotFoundError } from './errors.ts';
import { findPayout } from './payoutRecord.ts';
import { open } from './secretBox.ts';

/** What a claim URL or token reads as unless it is asked for. */
export const HIDDEN = '(hidden; --reveal)';

export interface ShownPayout {
  payout: {
    id: string;
    store_id: string;
    reference_id: string;
    amount: string;
    coin: string;
    chain_id: number;
    token_address: string;
    receiver_email: string | null;
    sender_name: string | null;
    sender_message: string | null;
    create_outcome: string;
    attempts: number;
    last_error: string | null;
    idempotent_hit: boolean;
    claim_link_id: string | null;
    link_status: string | null;
    funding_tx_hash: string | null;
    funded_amount: string | null;
    pool_address: string | null;
    funded_at: string | null;
    expires_at: string | null;
    claimed_at: string | null;
    /** The service said it was claimed (claimed_at waits for the chain's claim). */
    claimed_reported_at: string | null;
    cancelled_at: string | null;
    expired_at: string | null;
    refund_tx_hash: string | null;
    refunded_at: string | null;
    created_at: string;
    updated_at: string;
    /** The bearer claim URL: only with reveal; HIDDEN otherwise; null when we hold none. */
    claim_url: string | null;
    /** The bearer claim token (returned once by the funding call): same rules. */
    claim_token: string | null;
  };
  /** The claim link's entries, oldest first. */
  entries: EntryView[];
  findings: Array<{ id: string; kind: string; severity: Severity; first_seen_at: string }>;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * A payout (by payout id or claim-link id), its ledger entries and open findings. The claim URL
 * and token are opened only with `reveal`; otherwise they read HIDDEN.
 */
export async function showPayout(
  deps: Pick<DomainContext, 'db' | 'encryptionKey'>,
  idOrClaimLinkId: string,
  options: { reveal?: boolean } = {},
): Promise<ShownPayout> {
  const p = await findPayout(deps.db, { idOrClaimLinkId });
  if (!p) throw new PayoutNotFoundError(idOrClaimLinkId);
  const secret = (sealed: string | null) => {
    if (sealed === null) return null;
    if (!options.reveal) return HIDDEN;
    const value = open(deps.encryptionKey, sealed);
    addSecretValue(value);
    return value;
  };
  const entries = p.claimLinkId ? await listEntries(deps.db, { refId: p.claimLinkId, limit: 100 }) : [];
  const refs = [p.id, ...(p.claimLinkId ? [p.claimLinkId] : [])];
  const findings = await deps.db.execute<{
    id: string;
    kind: string;
    severity: Severity;
    first_seen_at: Date;
  }>(sql`
    select id::text, kind, severity, first_seen_at from findings
    where ref_id in (${sql.join(
      refs.map((r) => sql`${r}`),
      sql`, `,
    )}) and resolved_at is null
    order by id`);
  return {
    payout: {
      id: p.id,
      store_id: p.storeId,
      reference_id: p.referenceId,
      amount: p.amount,
      coin: p.coin,
      chain_id: p.chainId,
      token_address: p.tokenAddress,
      receiver_email: p.receiverEmail,
      sender_name: p.senderName,
      sender_message: p.senderMessage,
      create_outcome: p.createOutcome,
      attempts: p.attempts,
      last_error: p.lastError,
      idempotent_hit: p.idempotentHit,
      claim_link_id: p.claimLinkId,
      link_status: p.linkStatus,
      funding_tx_hash: p.fundingTxHash,
      funded_amount: p.fundedAmount,
      pool_address: p.poolAddress,
      funded_at: iso(p.fundedAt),
      expires_at: p.fundedAt ? claimLinkExpiresAt(p.fundedAt).toISOString() : null,
      claimed_at: iso(p.claimedAt),
      claimed_reported_at: iso(p.claimedReportedAt),
      cancelled_at: iso(p.cancelledAt),
      expired_at: iso(p.expiredAt),
      refund_tx_hash: p.refundTxHash,
      refunded_at: iso(p.refundedAt),
      created_at: p.createdAt.toISOString(),
      updated_at: p.updatedAt.toISOString(),
      claim_url: secret(p.claimUrlEnc),
      claim_token: secret(p.claimTokenEnc),
    },
    entries: entries.slice().reverse().map(entryView),
    findings: findings.rows.map((f) => ({
      id: f.id,
      kind: f.kind,
      severity: f.severity,
      first_seen_at: new Date(f.first_seen_at).toISOString(),
    })),
  };
}
