import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import type { Token } from '../ledger/accounts.ts';
import {
  CORRECTABLE_KINDS,
  type CorrectableKind,
  type CorrectionSource,
  correctionSource,
  isCorrectableKind,
} from '../ledger/rules/correctionRules.ts';
import { CorrectionError } from './errors.ts';

/** Class of the two-key advisory lock on an intent's corrections (other locks use other classes). */
const CORRECTION_LOCK_CLASS = 0x0c_04_4e;

/** A finding a correction can settle, with what its intent's entries leave on the source account. */
export interface FindingLeftover {
  findingId: bigint;
  kind: CorrectableKind;
  ref: { type: string; id: string };
  storeId: string;
  source: CorrectionSource;
  token: Token;
  /** Signed balance of the source account over the intent's own entries (base units). */
  leftover: bigint;
}

/**
 * The finding named by `id` and its leftover, read after the intent's corrections are locked (so
 * two corrections of one intent take turns and never move more than is left). An unknown finding,
 * one of another kind, or one whose intent's entries leave nothing is a CorrectionError.
 */
export async function lockedFindingLeftover(tx: DbExecutor, id: string): Promise<FindingLeftover> {
  const text = id.trim();
  if (!/^\d{1,18}$/.test(text))
    throw new CorrectionError(
      'not_found',
      `${JSON.stringify(id)} is no finding id (see stablebooks findings list)`,
    );
  const { rows } = await tx.execute<{
    kind: string;
    ref_type: string;
    ref_id: string;
    details: Record<string, unknown>;
  }>(sql`select kind, ref_type, ref_id, details from findings where id = ${text}::bigint`);
  const finding = rows[0];
  if (!finding) throw new CorrectionError('not_found', `no finding ${text} (see stablebooks findings list)`);
  if (!isCorrectableKind(finding.kind) || finding.ref_type !== 'checkout_intent')
    throw new CorrectionError(
      'wrong_kind',
      `finding ${text} is ${finding.kind}; adjust move corrects only ${CORRECTABLE_KINDS.join(', ')}`,
    );
  await tx.execute(sql`select pg_advisory_xact_lock(${CORRECTION_LOCK_CLASS}, hashtext(${finding.ref_id}))`);
  const source = correctionSource(finding.kind, finding.details);
  const held = await tx.execute<{
    store_id: string;
    chain_id: string;
    token: string;
    symbol: string;
    decimals: number;
    balance: string;
  }>(sql`
    select a.store_id, a.chain_id::text, a.token, a.symbol, a.decimals, sum(p.amount)::text as balance
      from ledger_entries e
      join ledger_postings p on p.entry_id = e.id
      join ledger_accounts a on a.id = p.account_id
     where e.ref_type = 'checkout_intent' and e.ref_id = ${finding.ref_id}
       and a.code like ${`${source}:%`}
     group by a.id, a.store_id, a.chain_id, a.token, a.symbol, a.decimals
    having sum(p.amount) <> 0
     order by a.id`);
  const [only, ...more] = held.rows;
  if (!only)
    throw new CorrectionError(
      'nothing_left',
      `finding ${text} (${finding.kind}, intent ${finding.ref_id}): its entries leave nothing in ${source}; nothing to move`,
    );
  // An intent is paid in one token: two accounts would be a fact no correction should guess about.
  if (more.length > 0)
    throw new CorrectionError(
      'nothing_left',
      `finding ${text}: intent ${finding.ref_id} leaves money in ${held.rows.length} ${source} accounts; correct them by hand`,
    );
  return {
    findingId: BigInt(text),
    kind: finding.kind,
    ref: { type: finding.ref_type, id: finding.ref_id },
    storeId: only.store_id,
    source,
    token: {
      chainId: Number(only.chain_id),
      address: only.token as `0x${string}`,
      symbol: only.symbol,
      decimals: only.decimals,
    },
    leftover: BigInt(only.balance),
  };
}
