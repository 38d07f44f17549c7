import { sql } from 'drizzle-orm';
import { allocate } from '../chain/allocations.ts';
import type { TransferRow } from '../chain/transferRow.ts';
import type { DbExecutor } from '../db/database.ts';
import { type EventDraft, payoutSettledId, tokenData } from '../events/recordEvent.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import { account, accountCode } from '../ledger/accounts.ts';
import type { RuleOutcome } from '../ledger/entryDraft.ts';
import { postEntry } from '../ledger/postEntry.ts';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';
import type { ClaimLinkFactBase } from '../ledger/rules/claimLinkRules.ts';
import type { SettlementDeps } from './settlementDeps.ts';

/**
 * The chain side of claim links (docs/accounting.md, rules 5 to 8): a custody outflow that funds
 * a link settles its fee and teaches us the link's pool wallet; out of that pool, a transfer back
 * to custody is the refund, the fee booked at funding leaving to anyone else is the service's
 * sweep (nothing to book), and anything else is the claim. Which entry a claim or refund gets is
 * decided by what the ledger holds for the link (claim_pool or refund_receivable), not by the
 * payout's timestamps alone, so a claim that became final after our expiry, a reorg that undid
 * either, or a second refund all land where the money is.
 *
 * - claimLinkFunding.ts: a custody outflow that funds a link (rule 5's fee, the pool learnt);
 * - claimLinkPoolOutflow.ts: money out of a pool, sent to the refund or to the claim;
 * - claimLinkClaim.ts: the fee sweep or the claim (rule 6);
 * - claimLinkRefund.ts: the refund (rule 8), closing the link first (rule 7) when still open;
 * - this file: what they share (the payout row they read, posting, what the ledger holds for a link).
 */
/** The matchers below run inside the settlement's transaction: everything but the pool. */
export type ClaimLinkSettlementDeps = Omit<SettlementDeps, 'db'>;

/** A payout row as the claim-link settlement reads it (selected with `payoutColumns`, often FOR UPDATE). */
export type PayoutRow = {
  id: string;
  store_id: string;
  claim_link_id: string | null;
  amount: string;
  token_address: string;
  funding_tx_hash: string | null;
  pool_address: string | null;
  funded_at: Date | null;
  reference_id: string;
  create_outcome: string;
  claimed_at: Date | null;
  cancelled_at: Date | null;
  expired_at: Date | null;
  refund_tx_hash: string | null;
  refunded_at: Date | null;
};

export const payoutColumns = sql.raw(
  'id, store_id, claim_link_id, amount, token_address, funding_tx_hash, pool_address, funded_at, reference_id, create_outcome, claimed_at, cancelled_at, expired_at, refund_tx_hash, refunded_at',
);

/** Posts a rule's entry (if any) and writes its findings; the entry's id, null when there was none. */
export async function post(
  tx: DbExecutor,
  deps: ClaimLinkSettlementDeps,
  outcome: RuleOutcome,
  storeId: string,
): Promise<bigint | null> {
  const posted = outcome.entry ? await postEntry(tx, outcome.entry, { accounts: deps.accounts }) : null;
  for (const f of outcome.findings) await recordFinding(tx, f, storeId);
  return posted ? posted.id : null;
}

/** The rule that allocates each purpose of money out of a pool (docs/accounting.md). */
const POOL_RULE = { fee_sweep: 'rule 6', claim: 'rule 6', refund: 'rule 8' } as const;

/**
 * Allocates the pool's side of `row`, its whole value, to the link: its sweep, claim or refund. A
 * refund explains custody's side too (rule 8 books both wallets at once), so it is allocated on
 * both sides.
 */
export async function allocatePoolOutflow(
  tx: DbExecutor,
  row: TransferRow,
  link: Link,
  purpose: keyof typeof POOL_RULE,
  entryId: bigint | null,
): Promise<void> {
  const sides = purpose === 'refund' ? (['out', 'in'] as const) : (['out'] as const);
  for (const side of sides)
    await allocate(tx, {
      transferId: row.id,
      side,
      obligation: { type: 'claim_link', id: link.base.claimLinkId },
      purpose,
      amount: BigInt(row.value),
      rule: POOL_RULE[purpose],
      entryId,
      storeId: link.base.storeId,
    });
}

/**
 * `payout.settled` of a claim or refund booked from a pool's transfer: its id names the transfer,
 * so the same booking never writes a second event.
 */
export function payoutSettledEvent(
  link: Link,
  outcome: 'claimed' | 'refunded',
  transfer: ChainTransferFact,
  revision: number,
  extra: Record<string, unknown> = {},
): EventDraft {
  const { payout, base } = link;
  return {
    id: payoutSettledId(payout.id, outcome, revision),
    type: 'payout.settled',
    occurredAt: transfer.occurredAt,
    data: {
      payout_id: payout.id,
      claim_link_id: base.claimLinkId,
      store_id: base.storeId,
      outcome,
      revision,
      ...tokenData(base.token),
      amount: base.amount,
      tx_hash: transfer.txHash.toLowerCase(),
      log_index: transfer.logIndex,
      ...extra,
    },
  };
}

/**
 * The ledger entry kind that books each settlement outcome: how often one was reversed is the
 * revision of the next announcement of that outcome (and what its reversal event names).
 */
export const SETTLED_KIND = { claimed: 'claim_link.claimed', refunded: 'claim_link.refunded' } as const;

/** A payout with its link, as the pool matchers below use it. */
export interface Link {
  payout: PayoutRow;
  base: ClaimLinkFactBase;
  /** The link amount in base units. */
  amount: bigint;
}

/** What the ledger holds for one link in claim_pool and refund_receivable (its own entries only). */
export async function linkBalances(
  tx: DbExecutor,
  base: ClaimLinkFactBase,
): Promise<{ pool: bigint; receivable: bigint }> {
  const poolCode = accountCode(account('assets:claim_pool', base.storeId, base.token));
  const receivableCode = accountCode(account('assets:refund_receivable', base.storeId, base.token));
  const { rows } = await tx.execute<{ code: string; balance: string }>(sql`
    select a.code, sum(p.amount)::text as balance
    from ledger_entries e
    join ledger_postings p on p.entry_id = e.id
    join ledger_accounts a on a.id = p.account_id
    where e.ref_type = 'claim_link' and e.ref_id = ${base.claimLinkId}
      and a.code in (${poolCode}, ${receivableCode})
    group by a.code`);
  const of = (code: string) => BigInt(rows.find((r) => r.code === code)?.balance ?? '0');
  return { pool: of(poolCode), receivable: of(receivableCode) };
}
