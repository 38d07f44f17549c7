import { sql } from 'drizzle-orm';
import { formatChainHead } from '../../ledger/chainHead.ts';
import { type ChainBreak, verifyLedgerChain } from '../../ledger/verifyLedgerChain.ts';
import { insertFound } from '../foundFindings.ts';
import type { CheckContext, CheckOutcome } from './checkContext.ts';

/** The finding's ref: the first entry that does not match, or the missing seal when there is no entry. */
export function chainBreakRef(b: ChainBreak): { refType: string; refId: string } {
  return b.entryId === null
    ? { refType: 'ledger_seal', refId: b.seq.toString() }
    : { refType: 'ledger_entry', refId: b.entryId.toString() };
}

/**
 * Assertion: the entries' hash chain, recomputed over the whole ledger in the run's snapshot
 * (docs/accounting.md, "The entries' hash chain"). Every entry, not the period's: a rewrite of
 * last year's entry is as much a rewrite. The first break is a critical `ledger_chain_broken`
 * finding naming the entry, which fails the run and, like every open critical finding, alerts.
 *
 * The chain is also checked against the head the last completed run published (recon_runs.counts):
 * an owner who rewrote entries and recomputed every later seal leaves a chain that verifies, but
 * no longer gives that head; to get past this check they must rewrite recon_runs too, and the
 * reports already sent out still hold the head.
 *
 * The chain is the whole ledger's, so the finding has no store_id. An unscoped run owns the kind
 * (a chain that matches again resolves it); a store-scoped run checks the chain too, but owns only
 * the break it found, so it never resolves what an unscoped run found.
 */
export async function assertLedgerChain(ctx: CheckContext): Promise<CheckOutcome> {
  const v = await verifyLedgerChain(ctx.tx, { expectHead: await lastPublishedHead(ctx) });
  const b = v.broken;
  if (b) {
    const { refType, refId } = chainBreakRef(b);
    await insertFound(
      ctx.tx,
      sql`values ('ledger_chain_broken', 'critical', null::text, ${refType}, ${refId},
        ${JSON.stringify({
          seq: b.seq.toString(),
          entry_id: b.entryId?.toString() ?? null,
          entry_kind: b.kind,
          entry_store_id: b.storeId,
          entry_ref_type: b.ref?.type ?? null,
          entry_ref_id: b.ref?.id ?? null,
          reason: b.reason,
        })}::jsonb)`,
    );
  }
  const head = v.head ? `; head ${formatChainHead(v.head)}` : '';
  return {
    result: {
      name: 'assertions.ledger_chain',
      layer: 'assertions',
      status: b ? 'fail' : 'pass',
      count: b ? 1 : 0,
      detail: b
        ? `seal ${b.seq} does not match: ${b.reason}`
        : `${v.verified} sealed entries recomputed, every hash matches${head}`,
    },
    owned:
      ctx.storeId === null
        ? [
            { kind: 'ledger_chain_broken', refType: 'ledger_entry' },
            { kind: 'ledger_chain_broken', refType: 'ledger_seal' },
          ]
        : b
          ? [
              {
                kind: 'ledger_chain_broken',
                refType: chainBreakRef(b).refType,
                refIds: [chainBreakRef(b).refId],
              },
            ]
          : [],
  };
}

/** The head the last completed run (any store) published; undefined before the first one. */
async function lastPublishedHead(ctx: CheckContext): Promise<{ seq: bigint; hash: string } | undefined> {
  const { rows } = await ctx.tx.execute<{ seq: string | null; hash: string | null }>(sql`
    select counts->'ledger_chain'->>'seq' as seq, counts->'ledger_chain'->>'hash' as hash from recon_runs
    where status = 'completed' and jsonb_typeof(counts->'ledger_chain') = 'object'
    order by finished_at desc limit 1`);
  const r = rows[0];
  if (!r?.seq || !r.hash || !/^\d+$/.test(r.seq)) return undefined;
  return { seq: BigInt(r.seq), hash: r.hash };
}
