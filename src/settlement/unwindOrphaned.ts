import { sql } from 'drizzle-orm';
import { type TransferRow, transferColumns, transferFact } from '../chain/transferRow.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import { reverseEntry } from '../ledger/postEntry.ts';
import { type ChainEntryRole, reorgReversal } from '../ledger/rules/chainTransferRules.ts';
import { unwindProvenSuspense } from '../payments/provenPaymentSuspense.ts';
import { unmarkClaimed, unmarkRefunded } from '../payouts/chainSettlement.ts';
import { supersedeClassification } from '../suspense/classifySuspense.ts';
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
  for (const role of roles) {
    const decision = reorgReversal({ transfer: fact, posted: role });
    for (const f of decision.findings) await recordFinding(tx, f, row.store_id);
    if (!decision.reverse) continue;
    const entry = await tx.execute<{ id: string; ref_id: string }>(
      sql`select id::text, ref_id from ledger_entries where idempotency_key = ${decision.reverse}`,
    );
    const reversed = entry.rows[0];
    if (reversed) {
      const reason = `block ${row.block_hash} orphaned by a reorg`;
      // Suspense a person classified (rule 10) leaves with the entry that put it there.
      if (role.kind === 'transfer_in_unmatched')
        await supersedeClassification(tx, BigInt(reversed.id), `rule 3: ${reason}`);
      await reverseEntry(tx, BigInt(reversed.id), reason);
      // The money left suspense with its entry: its finding has no cause any more (the
      // reorged_transfer finding tells the story). If the replacement block books it to
      // suspense again, rule 9 opens it again.
      if (role.kind === 'transfer_in_unmatched')
        await resolveFinding(tx, 'unmatched_transfer_in', { type: 'chain_transfer', id: reversed.ref_id });
      if (role.kind === 'payment_proof') await unwindProvenSuspense(tx, reversed.ref_id, reason);
    }
    if (role.kind === 'payment_returned') await reopenReturnedPayment(tx, deps, row);
    if (role.kind === 'claim_link_claimed') {
      await unmarkClaimed(tx, role.claimLinkId);
    }
    if (role.kind === 'claim_link_refunded') {
      await unmarkRefunded(tx, role.claimLinkId);
    }
  }
  await tx.execute(sql`update chain_transfers set unwound_at = now() where id = ${id}::bigint`);
  return true;
}
