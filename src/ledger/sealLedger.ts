import { sql } from 'drizzle-orm';
import type { Db, DbExecutor } from '../db/database.ts';
import { type ChainHead, chainHead } from './chainHead.ts';
import { GENESIS_HASH, readSealContents, sealHash } from './sealContent.ts';

/** One sealer at a time (transaction-level advisory lock); any constant, the same in every process. */
const SEAL_LOCK_KEY = 0x5e_a1_ed;
/** Entries sealed per run at most; the rest wait for the next run (every few seconds). */
const DEFAULT_BATCH = 20_000;
/** Entries read and inserted per statement. */
const CHUNK = 1_000;

export interface SealResult {
  /** false when another sealer held the lock: this run did nothing. */
  ran: boolean;
  sealed: number;
  head: ChainHead | null;
  /** Entries committed and still not sealed after this run (written by transactions at or above its horizon). */
  unsealed: number;
  /** Seconds since the oldest of those was recorded; 0 when there is none. */
  lagSeconds: number;
}

/**
 * Extends the hash chain over the entries committed since the last run (docs/decisions.md, "A hash
 * chain over the entries, sealed by a job"). Posters never touch the chain, so they neither wait on
 * it nor can break it; the sealer appends after the fact, in an order no late commit can disturb.
 *
 * The order: an entry is sealed only once every transaction that could still write one below it
 * has finished. The horizon is this snapshot's xmin (as for balance checkpoints,
 * src/ledger/balances.ts): every transaction with a smaller id has committed or aborted, so no
 * entry with tx_id below it can appear later. Entries below the horizon and not yet sealed are
 * appended in (tx_id, id) order. The chain's order is then seq, recorded in the seals, and
 * verification follows seq, never re-deriving the order.
 *
 * To read only the new entries, a run starts at the previous run's horizon (stored on its seals),
 * when that horizon is usable on this server (ledger_checkpoint_usable, as for checkpoints: one
 * restored from another server whose counter was ahead is not, and the run then looks at every
 * entry once). A run that stops at `batch` entries records the tx_id of its last entry as its
 * horizon, so the rest of that transaction's entries are read next time.
 *
 * One sealer at a time: a transaction-level advisory lock (a second run returns at once), and seq
 * as primary key would refuse a fork anyway.
 */
export async function sealLedger(db: Db, options: { batch?: number } = {}): Promise<SealResult> {
  const batch = options.batch ?? DEFAULT_BATCH;
  return db.transaction(
    async (tx) => {
      const lock = await tx.execute<{ ok: boolean }>(
        sql`select pg_try_advisory_xact_lock(${SEAL_LOCK_KEY}) as ok`,
      );
      if (!lock.rows[0]?.ok) return { ran: false, sealed: 0, head: null, unsealed: 0, lagSeconds: 0 };
      const h = await tx.execute<{ horizon: string }>(
        sql`select pg_snapshot_xmin(pg_current_snapshot())::text as horizon`,
      );
      const horizon = h.rows[0]?.horizon ?? '0';
      const last = await tx.execute<{ seq: string; hash: string; horizon: string; usable: boolean }>(sql`
        select l.seq::text, l.hash, l.horizon::text, ledger_checkpoint_usable(l.horizon, l.xmin) as usable
        from ledger_seals l order by l.seq desc limit 1`);
      const prev = last.rows[0];
      const from = prev?.usable ? prev.horizon : '0';
      const pending = await tx.execute<{ id: string; tx_id: string }>(sql`
        select e.id::text, e.tx_id::text from ledger_entries e
        where e.tx_id >= ${from}::xid8 and e.tx_id < ${horizon}::xid8
          and not exists (select 1 from ledger_seals s where s.entry_id = e.id)
        order by e.tx_id, e.id
        limit ${batch}`);
      const ids = pending.rows.map((r) => BigInt(r.id));
      const runHorizon = ids.length === batch ? (pending.rows[ids.length - 1]?.tx_id ?? horizon) : horizon;

      let seq = BigInt(prev?.seq ?? '0');
      let hash = prev?.hash ?? GENESIS_HASH;
      for (let i = 0; i < ids.length; i += CHUNK) {
        const chunk = ids.slice(i, i + CHUNK);
        const contents = await readSealContents(tx, chunk);
        const seqs: string[] = [];
        const prevHashes: string[] = [];
        const hashes: string[] = [];
        for (const id of chunk) {
          const content = contents.get(id.toString());
          if (!content) throw new Error(`ledger_seals: entry ${id} vanished while being sealed`);
          prevHashes.push(hash);
          hash = sealHash(hash, content);
          hashes.push(hash);
          seq += 1n;
          seqs.push(seq.toString());
        }
        // Four array parameters, not five per row: building and binding 5,000 parameters cost more
        // than the rest of the run (measured). Hex hashes and integers need no quoting in an array literal.
        const array = (values: readonly (string | bigint)[]) => `{${values.join(',')}}`;
        await tx.execute(sql`
          insert into ledger_seals (seq, entry_id, prev_hash, hash, horizon)
          select t.seq, t.entry_id, t.prev_hash, t.hash, ${runHorizon}::xid8
          from unnest(${array(seqs)}::bigint[], ${array(chunk)}::bigint[], ${array(prevHashes)}::text[],
                      ${array(hashes)}::text[]) as t(seq, entry_id, prev_hash, hash)`);
      }
      const backlog = await sealBacklog(tx);
      return { ran: true, sealed: ids.length, head: await chainHead(tx), ...backlog };
    },
    // Read committed on purpose: under repeatable read the snapshot is taken by the lock's own
    // statement, before the lock is granted, so a sealer let in just as another committed would
    // not see that one's seals and fork the chain (the seq key would refuse it, failing the run).
    // Each statement after the lock sees every seal committed before it; the entries
    // below the horizon were all committed when the horizon was read, so later statements see
    // exactly them.
    { isolationLevel: 'read committed' },
  );
}

/**
 * What the sealer has left: entries committed and not sealed, and how long ago the oldest was
 * recorded (0 when none). Reads only the entries at or above the last run's horizon (when usable,
 * see above), through the tx_id index; cheap enough for every metrics scrape.
 */
export async function sealBacklog(db: DbExecutor): Promise<{ unsealed: number; lagSeconds: number }> {
  const { rows } = await db.execute<{ n: string; lag: string | null }>(sql`
    select count(*)::text as n, extract(epoch from now() - min(e.recorded_at))::text as lag
    from ledger_entries e
    where e.tx_id >= coalesce((
        select case when ledger_checkpoint_usable(horizon, xmin) then horizon else '0'::xid8 end
        from ledger_seals order by seq desc limit 1), '0'::xid8)
      and not exists (select 1 from ledger_seals s where s.entry_id = e.id)`);
  return { unsealed: Number(rows[0]?.n ?? 0), lagSeconds: Math.max(0, Number(rows[0]?.lag ?? 0)) };
}
