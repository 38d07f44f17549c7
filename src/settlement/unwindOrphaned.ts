import { sql } from 'drizzle-orm';
import { type LiveAllocation, releaseAllocations, transferAllocations } from '../chain/allocations.ts';
import { type TransferRow, transferColumns, transferFact } from '../chain/transferRow.ts';
import type { DbExecutor } from '../db/database.ts';
import { bookingRevision, entryMoved, movedData, recordReversal } from '../events/announcements.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import { type PostedEntry, reverseEntry } from '../ledger/postEntry.ts';
import { reversalCount } from '../ledger/reversalCount.ts';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';
import { type ChainEntryRole, reorgReversal } from '../ledger/rules/chainTransferRules.ts';
import { unwindProvenSuspense } from '../payments/provenPaymentSuspense.ts';
import { unmarkClaimed, unmarkRefunded } from '../payouts/chainSettlement.ts';
import { supersedeClassification } from '../suspense/classifySuspense.ts';
import { SETTLED_KIND } from './claimLinkPool.ts';
import { REFUND_PIECE } from './claimLinkRefund.ts';
import { reopenReturnedPayment } from './paymentReturns.ts';
import type { SettlementDeps } from './settlementDeps.ts';

/** Rule 3: reverses what was booked from an orphaned inclusion and undoes what it told the payouts. */
export async function unwindOrphaned(tx: DbExecutor, deps: SettlementDeps, id: string): Promise<boolean> {
  const row = (
    await tx.execute<TransferRow>(sql`
      select ${transferColumns} from chain_transfers
      where id = ${id}::bigint and state = 'orphaned' and matched_as is not null and unwound_at is null
      for update skip locked`)
  ).rows[0];
  if (!row) return false;
  const fact = transferFact(row);
  const roles = (row.matched_as ?? '').split(',').flatMap((kind): ChainEntryRole[] => {
    const link = row.matched_ref ?? '';
    switch (kind) {
      case 'payment_proof':
      case 'payment_returned':
      case 'transfer_in_unmatched':
      case 'transfer_out_unmatched':
        return [{ kind }];
      case 'claim_link_funding_fee':
      case 'claim_link_claimed':
      case 'claim_link_refunded':
        return [{ kind, claimLinkId: link }];
      // A refund's piece is booked under the refund's key (rule 8 per inclusion).
      case REFUND_PIECE:
        return [{ kind: 'claim_link_refunded', claimLinkId: link }];
      default:
        return [];
    }
  });
  // Read before the roles' reversals: the entries the row's allocations caused (rule 3 reverses
  // each once, below, when no role named it: a share of a log split between intents).
  const allocated = await transferAllocations(tx, row.id);
  for (const role of roles) {
    const decision = reorgReversal({ transfer: fact, posted: role });
    for (const f of decision.findings) await recordFinding(tx, f, row.store_id);
    if (!decision.reverse) continue;
    const entry = await tx.execute<{ id: string; ref_id: string }>(
      sql`select id::text, ref_id from ledger_entries where idempotency_key = ${decision.reverse}`,
    );
    const reversed = entry.rows[0];
    let reversal: PostedEntry | null = null;
    if (reversed) {
      const reason = `block ${row.block_hash} orphaned by a reorg`;
      // Suspense a person classified (rule 10) leaves with the entry that put it there.
      if (role.kind === 'transfer_in_unmatched')
        await supersedeClassification(tx, BigInt(reversed.id), `rule 3: ${reason}`);
      reversal = await reverseEntry(tx, BigInt(reversed.id), reason);
      if (role.kind === 'payment_proof')
        await announceProofReversal(tx, deps, row.store_id, reversed, reversal, fact, reason);
      // The money left suspense with its entry: its finding has no cause any more (the
      // reorged_transfer finding tells the story). If the replacement block books it to
      // suspense again, rule 9 opens it again.
      if (role.kind === 'transfer_in_unmatched')
        await resolveFinding(tx, 'unmatched_transfer_in', { type: 'chain_transfer', id: reversed.ref_id });
      if (role.kind === 'payment_proof') await unwindProvenSuspense(tx, reversed.ref_id, reason);
    }
    if (role.kind === 'payment_returned') await reopenReturnedPayment(tx, deps, row);
    if (role.kind === 'claim_link_claimed') {
      const payoutId = await unmarkClaimed(tx, role.claimLinkId);
      if (payoutId && reversed && reversal)
        await announceSettlementReversal(tx, payoutId, 'claimed', role.claimLinkId, reversed, reversal, fact);
    }
    if (role.kind === 'claim_link_refunded') {
      const payoutId = await unmarkRefunded(tx, role.claimLinkId);
      if (payoutId && reversed && reversal)
        await announceSettlementReversal(
          tx,
          payoutId,
          'refunded',
          role.claimLinkId,
          reversed,
          reversal,
          fact,
        );
    }
  }
  await reverseAllocatedEntries(tx, deps, row, fact, allocated);
  // What the inclusion settled is no longer settled by it (an obligation counts it again as open).
  await releaseAllocations(tx, row.id, `block ${row.block_hash} orphaned by a reorg`);
  await tx.execute(sql`update chain_transfers set unwound_at = now() where id = ${id}::bigint`);
  return true;
}

/**
 * Every live entry an allocation of the orphaned row caused, that the roles of matched_as did not
 * name (one intent's share of a log that paid several, under its own key): reversed once each,
 * with what a proof's reversal does besides (its announcement, rule 4's suspense move undone).
 */
async function reverseAllocatedEntries(
  tx: DbExecutor,
  deps: SettlementDeps,
  row: TransferRow,
  fact: ChainTransferFact,
  allocated: LiveAllocation[],
): Promise<void> {
  const ids = [...new Set(allocated.flatMap((a) => (a.entry_id === null ? [] : [a.entry_id])))];
  if (ids.length === 0) return;
  const { rows } = await tx.execute<{ id: string; ref_id: string; kind: string }>(sql`
    select e.id::text, e.ref_id, e.kind from ledger_entries e
    where e.id = any(${sql.param(ids)}::bigint[])
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)
    order by e.id`);
  const reason = `block ${row.block_hash} orphaned by a reorg`;
  for (const entry of rows) {
    const reversal = await reverseEntry(tx, BigInt(entry.id), reason);
    if (entry.kind !== 'chain.payment_proven') continue;
    await announceProofReversal(tx, deps, row.store_id, entry, reversal, fact, reason);
    await unwindProvenSuspense(tx, entry.ref_id, reason);
  }
}

/** `payment.proven.reversed`: the proof of this log is taken back (the wallet's amount with it). */
async function announceProofReversal(
  tx: DbExecutor,
  deps: SettlementDeps,
  storeId: string | null,
  reversed: { id: string; ref_id: string },
  reversal: PostedEntry,
  fact: ChainTransferFact,
  reason: string,
): Promise<void> {
  const ref = { type: 'checkout_intent', id: reversed.ref_id };
  const entryId = BigInt(reversed.id);
  await recordReversal(tx, {
    type: 'payment.proven',
    subject: reversed.ref_id,
    ref,
    kind: 'chain.payment_proven',
    reversedRevision: await bookingRevision(tx, ref, 'chain.payment_proven', entryId),
    reversedEntryId: entryId,
    reversal,
    occurredAt: fact.occurredAt,
    reason,
    data: {
      intent_id: reversed.ref_id,
      store_id: storeId,
      // A share of a log paying several intents moved nothing in the wallet: its amount is what
      // it took from suspense, as its announcement said.
      ...movedData(
        (await entryMoved(tx, deps.config.chains, entryId, 'assets:wallet')) ??
          (await entryMoved(tx, deps.config.chains, entryId, 'assets:suspense')),
      ),
      tx_hash: fact.txHash.toLowerCase(),
      log_index: fact.logIndex,
    },
  });
}

/**
 * `payout.settled.reversed`: the claim (or the refund's last piece) is orphaned and the payout is
 * open again. Its revision is read before this reversal was written.
 */
async function announceSettlementReversal(
  tx: DbExecutor,
  payoutId: string,
  outcome: 'claimed' | 'refunded',
  claimLinkId: string,
  reversed: { id: string },
  reversal: PostedEntry,
  fact: ChainTransferFact,
): Promise<void> {
  const ref = { type: 'claim_link', id: claimLinkId };
  const kind = SETTLED_KIND[outcome];
  const entryId = BigInt(reversed.id);
  await recordReversal(tx, {
    type: 'payout.settled',
    subject: `${payoutId}:${outcome}`,
    ref,
    kind,
    reversedRevision: await reversalCount(tx, ref, kind, entryId),
    reversedEntryId: entryId,
    reversal,
    occurredAt: fact.occurredAt,
    reason: `block ${fact.blockHash} orphaned by a reorg`,
    data: {
      payout_id: payoutId,
      claim_link_id: claimLinkId,
      outcome,
      tx_hash: fact.txHash.toLowerCase(),
      log_index: fact.logIndex,
    },
  });
}
