import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { formatChainHead } from './chainHead.ts';
import { GENESIS_HASH, readSealContents, type SealContent, sealHash } from './sealContent.ts';

/** Seals read per statement. */
const PAGE = 2_000;

/** Where the chain first stops matching the entries (or a published head). */
export interface ChainBreak {
  seq: bigint;
  /** The entry of that seal (or the entry not in the chain); null when the seal itself is missing. */
  entryId: bigint | null;
  kind: string | null;
  storeId: string | null;
  ref: { type: string; id: string } | null;
  reason: string;
}

export interface ChainVerification {
  ok: boolean;
  /** Seals recomputed and found matching. */
  verified: number;
  /** The last seal recomputed and matching: seq and hash as a report prints them. */
  head: { seq: bigint; hash: string } | null;
  broken: ChainBreak | null;
}

/**
 * Recomputes the entries' hash chain from the entries themselves (docs/accounting.md, "The
 * entries' hash chain") and names the first seal that does not match: its entry was changed after
 * it was sealed (its content, a posting, an account's code), the seal was rewritten, or a seal is
 * missing. With `expectHead` (a head a report published earlier) it also compares the recomputed
 * chain at that seal: a rewrite followed by resealing everything after it is consistent in the
 * database, but can no longer produce that hash. Finally an entry below a horizon already sealed
 * but not in the chain (written behind the sealer, with a forged tx_id) is a break too.
 *
 * Reads in pages by seq; run it in one repeatable-read transaction for one consistent answer.
 */
export async function verifyLedgerChain(
  db: DbExecutor,
  options: {
    expectHead?: { seq: bigint; hash: string };
    onProgress?: (verified: number, total: number) => void;
  } = {},
): Promise<ChainVerification> {
  const { expectHead, onProgress } = options;
  const count = await db.execute<{ n: string }>(sql`select count(*)::text as n from ledger_seals`);
  const total = Number(count.rows[0]?.n ?? 0);
  let seq = 0n;
  let hash = GENESIS_HASH;
  let verified = 0;
  const result = (broken: ChainBreak | null): ChainVerification => ({
    ok: broken === null,
    verified,
    head: seq === 0n ? null : { seq, hash },
    broken,
  });

  for (;;) {
    const page = await db.execute<{ seq: string; entry_id: string; prev_hash: string; hash: string }>(sql`
      select l.seq::text, l.entry_id::text, l.prev_hash, l.hash from ledger_seals l
      where l.seq > ${seq.toString()}::bigint order by l.seq limit ${PAGE}`);
    if (page.rows.length === 0) break;
    const contents = await readSealContents(
      db,
      page.rows.map((r) => BigInt(r.entry_id)),
    );
    for (const s of page.rows) {
      const at = BigInt(s.seq);
      const entry = contents.get(s.entry_id) ?? null;
      const breakHere = (reason: string, e: SealContent | null = entry): ChainVerification =>
        result({ ...describe(at, e), entryId: BigInt(s.entry_id), reason });
      if (at !== seq + 1n)
        return result({ ...describe(seq + 1n, null), reason: `seal ${seq + 1n} is missing` });
      if (!entry) return breakHere(`entry ${s.entry_id} of seal ${at} is gone`);
      if (s.prev_hash !== hash)
        return breakHere(`seal ${at} does not follow seal ${seq}: the seals were rewritten`);
      const recomputed = sealHash(hash, entry);
      if (recomputed !== s.hash)
        return breakHere(`entry ${s.entry_id} or its postings differ from what seal ${at} covers`);
      seq = at;
      hash = recomputed;
      verified += 1;
      if (expectHead && expectHead.seq === at && expectHead.hash !== hash)
        return breakHere(
          `the chain at seal ${at} is ${hash}, not the published ${formatChainHead(expectHead)}: ` +
            `an entry at or before seal ${at} was rewritten and the chain resealed`,
        );
    }
    onProgress?.(verified, total);
  }
  if (expectHead && expectHead.seq > seq)
    return result({
      ...describe(expectHead.seq, null),
      reason: `the chain ends at seal ${seq}, before the published head ${formatChainHead(expectHead)}: seals were removed`,
    });

  const behind = await db.execute<{ id: string }>(sql`
    select e.id::text from ledger_entries e,
      (select horizon, xmin from ledger_seals order by seq desc limit 1) h
    where e.tx_id < h.horizon and ledger_checkpoint_usable(h.horizon, h.xmin) and not exists (select 1 from ledger_seals s where s.entry_id = e.id)
    order by e.tx_id, e.id limit 1`);
  const stray = behind.rows[0];
  if (stray) {
    const entry = (await readSealContents(db, [BigInt(stray.id)])).get(stray.id) ?? null;
    return result({
      ...describe(seq + 1n, entry),
      entryId: BigInt(stray.id),
      reason: `entry ${stray.id} is not in the chain though every entry before the sealed horizon is: it was written behind the sealer`,
    });
  }
  return result(null);
}

function describe(seq: bigint, entry: SealContent | null): Omit<ChainBreak, 'reason'> {
  return {
    seq,
    entryId: entry ? BigInt(entry.id) : null,
    kind: entry?.kind ?? null,
    storeId: entry?.store_id ?? null,
    ref: entry ? { type: entry.ref_type, id: entry.ref_id } : null,
  };
}
