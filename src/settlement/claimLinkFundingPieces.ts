import { sql } from 'drizzle-orm';
import { allocate } from '../chain/allocations.ts';
import type { TransferRow } from '../chain/transferRow.ts';
import type { DbExecutor } from '../db/database.ts';
import { account, accountCode, type Token } from '../ledger/accounts.ts';

/**
 * A claim link's funding in pieces (docs/accounting.md, rule 5 and "Pieces and bundles"): every
 * final transfer from custody into the link's pool while the link is open is a piece of its
 * funding, allocated to it (side out, purpose 'funding'). A piece is what one transaction sends to
 * the pool (its logs summed, as one funding paid as principal and fee apart); its fee entry is
 * keyed by its first log, and books only what the link's funding now exceeds A by beyond the fee
 * earlier pieces booked.
 */

/** What a link was funded with, and the fee booked for it, by pieces other than `row`'s transaction. */
export async function earlierPieces(
  tx: DbExecutor,
  row: TransferRow,
  linkId: string,
  storeId: string,
  token: Token,
  pieceKey: string,
): Promise<{ fundedBefore: bigint; feeBefore: bigint }> {
  const feeCode = accountCode(account('expense:payout_fees', storeId, token));
  const { rows } = await tx.execute<{ funded: string | null; fee: string | null }>(sql`
    select
      (select sum(a.amount) from allocations a join chain_transfers t on t.id = a.transfer_id
       where a.obligation_type = 'claim_link' and a.obligation_id = ${linkId} and a.purpose = 'funding'
         and not (t.tx_hash = ${row.tx_hash} and t.block_hash = ${row.block_hash}))::text as funded,
      (select sum(p.amount) from ledger_entries e
       join ledger_postings p on p.entry_id = e.id join ledger_accounts acc on acc.id = p.account_id
       where e.ref_type = 'claim_link' and e.ref_id = ${linkId}
         and e.kind in ('claim_link.funding_fee', 'claim_link.funding_fee.reversal')
         and e.idempotency_key not in (${pieceKey}, ${`reversal:${pieceKey}`})
         and acc.code = ${feeCode})::text as fee`);
  return { fundedBefore: BigInt(rows[0]?.funded ?? '0'), feeBefore: BigInt(rows[0]?.fee ?? '0') };
}

/** The id of the entry already posted under `key` (another log of the same piece booked it). */
export async function postedEntryId(tx: DbExecutor, key: string): Promise<bigint | null> {
  const { rows } = await tx.execute<{ id: string }>(
    sql`select id::text from ledger_entries where idempotency_key = ${key}`,
  );
  return rows[0] ? BigInt(rows[0].id) : null;
}

/** Allocates `row` (custody's side) to the link's funding: rule 5, the entry it caused if any. */
export async function allocateFundingPiece(
  tx: DbExecutor,
  row: TransferRow,
  linkId: string,
  storeId: string,
  entryId: bigint | null,
): Promise<void> {
  await allocate(tx, {
    transferId: row.id,
    side: 'out',
    obligation: { type: 'claim_link', id: linkId },
    purpose: 'funding',
    amount: BigInt(row.value),
    rule: 'rule 5',
    entryId,
    storeId,
  });
}
