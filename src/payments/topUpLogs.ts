import { sql } from 'drizzle-orm';
import { type TransferRow, transferColumns } from '../chain/transferRow.ts';
import type { DbExecutor } from '../db/database.ts';
import { fewestSummingTo } from './payingLogs.ts';

/**
 * A top-up (docs/accounting.md, rule 2): an intent paid directly in more than one transaction,
 * its named transaction short of N. The rest may be other final transfers into tx_to in the
 * intent's token that nothing else explains (undecided, or in rule-9 suspense), made within the
 * intent's window, whose values complete N exactly: exactness is what keeps a stranger's payment
 * out. Read only when the named logs fall short (never on the common path).
 */

/** How far before the intent was first tracked a top-up may be mined (clocks disagree). */
export const TOP_UP_CLOCK_SLACK_MS = 5 * 60_000;
/** The settlement's grace when the caller does not name it (10 minutes, POLL_INTERVAL_SCALE 1). */
export const DEFAULT_TOP_UP_GRACE_MS = 10 * 60_000;

export interface TopUpQuery {
  intentId: string;
  chainId: string;
  /** The named transaction (lower-case): its logs are not top-ups. */
  txHash: string;
  txTo: string;
  /** The token's contract, lower-case. */
  token: string;
  /** What the top-up must add, exactly. */
  owed: bigint;
  graceMs: number;
}

/**
 * The fewest free transfers (one or more) that add exactly `owed`, locked (SKIP LOCKED: a row
 * another matcher holds is left out, and its matcher looks again); null when none complete it.
 */
export async function lockTopUps(tx: DbExecutor, q: TopUpQuery): Promise<TransferRow[] | null> {
  if (q.owed <= 0n) return null;
  const slack = `${TOP_UP_CLOCK_SLACK_MS} milliseconds`;
  const grace = `${q.graceMs} milliseconds`;
  const { rows } = await tx.execute<TransferRow>(sql`
    with i as (select id, chain_id, tracked_at, confirmed_at from checkout_intents where id = ${q.intentId})
    select ${transferColumns} from chain_transfers t
    where t.chain_id = ${q.chainId}::bigint and t.to_address = ${q.txTo} and t.token = ${q.token}
      and t.state = 'final' and t.tx_hash <> ${q.txHash} and t.value > 0 and t.value <= ${q.owed.toString()}::numeric
      and t.matched_ref is null
      and (t.matched_as is null
           or string_to_array(t.matched_as, ',') <@ array['transfer_in_unmatched', 'transfer_out_unmatched', 'ignored'])
      and t.block_time >= (select tracked_at from i) - ${slack}::interval
      and t.block_time <= coalesce((select confirmed_at from i), now()) + ${grace}::interval
      -- Not another intent's named payment, and nothing of it allocated beyond rule 9.
      and not exists (select 1 from checkout_intents o where o.id <> ${q.intentId} and o.chain_id = t.chain_id
                      and (lower(o.tx_hash) = t.tx_hash or lower(o.tx_hash_2) = t.tx_hash))
      and not exists (select 1 from allocations a where a.transfer_id = t.id and a.side = 'in'
                      and a.purpose <> 'unmatched' and a.releases is null
                      and not exists (select 1 from allocations r where r.releases = a.id))
    order by t.block_number, t.log_index
    limit 50`);
  const picked = fewestSummingTo(rows, [q.owed], 1);
  if (!picked) return null;
  const locked = (
    await tx.execute<{ id: string }>(sql`
      select id::text from chain_transfers
      where id = any(${sql.param(picked.map((r) => r.id))}::bigint[]) and state = 'final' and matched_ref is null
        and (matched_as is null or matched_as not like '%payment%')
      for update skip locked`)
  ).rows;
  return locked.length === picked.length ? picked : null;
}
