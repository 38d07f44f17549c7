import { type SQL, sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';
import type { DbExecutor } from '../db/database.ts';
import type { Token } from '../ledger/accounts.ts';
import type { ClaimLinkFactBase } from '../ledger/rules/claimLinkRules.ts';
import type { StableCoinSymbol } from '../svc/models/stableCoin.ts';

/**
 * One row of `payouts` (src/payouts/schema.ts) as the payouts code reads it. `PayoutRecord` holds
 * the sealed claim URL and token; `PayoutView` is what leaves the module: only whether they are
 * held, never their values.
 */
export interface PayoutView {
  id: string;
  storeId: string;
  referenceId: string;
  /** Decimal string as sent to the service (canonical form). */
  amount: string;
  coin: StableCoinSymbol;
  chainId: number;
  tokenAddress: string;
  receiverEmail: string | null;
  senderName: string | null;
  senderMessage: string | null;
  createOutcome: 'pending' | 'created' | 'failed' | 'unknown';
  attempts: number;
  lastError: string | null;
  idempotentHit: boolean;
  claimLinkId: string | null;
  linkStatus: string | null;
  fundingTxHash: string | null;
  fundedAmount: string | null;
  poolAddress: string | null;
  fundedAt: Date | null;
  /** The chain's claim (rule 6 booked); only the chain side sets it. */
  claimedAt: Date | null;
  /** When the service first said the link is claimed (50108 to a cancel, a create replay). */
  claimedReportedAt: Date | null;
  cancelledAt: Date | null;
  expiredAt: Date | null;
  refundTxHash: string | null;
  refundedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  hasClaimUrl: boolean;
  hasClaimToken: boolean;
}

export interface PayoutRecord extends PayoutView {
  claimUrlEnc: string | null;
  claimTokenEnc: string | null;
}

type Row = {
  id: string;
  store_id: string;
  reference_id: string;
  amount: string;
  coin: number;
  chain_id: string | number;
  token_address: string;
  receiver_email: string | null;
  sender_name: string | null;
  sender_message: string | null;
  create_outcome: PayoutView['createOutcome'];
  attempts: number;
  last_error: string | null;
  idempotent_hit: boolean;
  claim_link_id: string | null;
  link_status: string | null;
  claim_url_enc: string | null;
  claim_token_enc: string | null;
  funding_tx_hash: string | null;
  funded_amount: string | null;
  pool_address: string | null;
  funded_at: Date | string | null;
  claimed_at: Date | string | null;
  claimed_reported_at: Date | string | null;
  cancelled_at: Date | string | null;
  expired_at: Date | string | null;
  refund_tx_hash: string | null;
  refunded_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
};

const date = (v: Date | string | null): Date | null => (v === null ? null : new Date(v));

export function coinSymbolOf(coin: number): StableCoinSymbol {
  return coin === 1 ? 'USDT' : 'USDC';
}

function toRecord(r: Row): PayoutRecord {
  return {
    id: r.id,
    storeId: r.store_id,
    referenceId: r.reference_id,
    amount: r.amount,
    coin: coinSymbolOf(r.coin),
    chainId: Number(r.chain_id),
    tokenAddress: r.token_address,
    receiverEmail: r.receiver_email,
    senderName: r.sender_name,
    senderMessage: r.sender_message,
    createOutcome: r.create_outcome,
    attempts: r.attempts,
    lastError: r.last_error,
    idempotentHit: r.idempotent_hit,
    claimLinkId: r.claim_link_id,
    linkStatus: r.link_status,
    fundingTxHash: r.funding_tx_hash,
    fundedAmount: r.funded_amount,
    poolAddress: r.pool_address,
    fundedAt: date(r.funded_at),
    claimedAt: date(r.claimed_at),
    claimedReportedAt: date(r.claimed_reported_at),
    cancelledAt: date(r.cancelled_at),
    expiredAt: date(r.expired_at),
    refundTxHash: r.refund_tx_hash,
    refundedAt: date(r.refunded_at),
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
    hasClaimUrl: r.claim_url_enc !== null,
    hasClaimToken: r.claim_token_enc !== null,
    claimUrlEnc: r.claim_url_enc,
    claimTokenEnc: r.claim_token_enc,
  };
}

/** The public view: the sealed values dropped. */
export function viewOf(record: PayoutRecord): PayoutView {
  const { claimUrlEnc: _url, claimTokenEnc: _token, ...view } = record;
  return view;
}

export type PayoutLookup =
  | { id: string }
  | { claimLinkId: string }
  | { idOrClaimLinkId: string }
  | { storeId: string; referenceId: string };

function where(lookup: PayoutLookup): SQL {
  if ('idOrClaimLinkId' in lookup)
    return sql`id = ${lookup.idOrClaimLinkId} or claim_link_id = ${lookup.idOrClaimLinkId}`;
  if ('id' in lookup) return sql`id = ${lookup.id}`;
  if ('claimLinkId' in lookup) return sql`claim_link_id = ${lookup.claimLinkId}`;
  return sql`store_id = ${lookup.storeId} and reference_id = ${lookup.referenceId}`;
}

/** Reads one payout; `forUpdate` locks its row until the caller's transaction ends. */
export async function findPayout(
  tx: DbExecutor,
  lookup: PayoutLookup,
  options: { forUpdate?: boolean } = {},
): Promise<PayoutRecord | undefined> {
  const { rows } = await tx.execute<Row>(
    sql`select * from payouts where ${where(lookup)} limit 1 ${options.forUpdate ? sql`for update` : sql``}`,
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

/** The registry's token of a payout (its chain and coin); the registry is the only source of tokens. */
export function tokenOf(deps: Pick<DomainContext, 'chains'>, payout: PayoutView): Token {
  const token = deps.chains.tokenBySymbol(payout.chainId, payout.coin);
  if (!token) {
    throw new Error(
      `payout ${payout.id}: chain ${payout.chainId} has no ${payout.coin} in the chain registry (CHAINS_FILE); it cannot be booked`,
    );
  }
  return token;
}

/** What every claim-link rule needs of a created payout. */
export function linkFactOf(deps: Pick<DomainContext, 'chains'>, payout: PayoutView): ClaimLinkFactBase {
  if (!payout.claimLinkId) throw new Error(`payout ${payout.id} has no claim link yet`);
  return {
    storeId: payout.storeId,
    claimLinkId: payout.claimLinkId,
    token: tokenOf(deps, payout),
    amount: payout.amount,
  };
}
