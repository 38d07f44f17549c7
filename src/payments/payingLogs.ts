import { sql } from 'drizzle-orm';
import { type TransferRow, transferColumns } from '../chain/transferRow.ts';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import type { Token } from '../ledger/accounts.ts';

/** A transaction's final logs into the intent's wallet, and those of them a proof may take. */
export interface WalletLogs {
  intoWallet: TransferRow[];
  /** The free ones, the one of an expected amount first. */
  free: TransferRow[];
}

/**
 * The logs into `txTo` (lower-case) in the intent's token, among a transaction's final logs, and
 * the free ones among them.
 */
export function walletLogs(
  logs: TransferRow[],
  intentId: string,
  txTo: string,
  token: Token | undefined,
  expected: bigint[],
): WalletLogs {
  const isExpected = (l: TransferRow) => expected.includes(BigInt(l.value));
  // Its logs into tx_to in the intent's token: one transaction may pay several intents into one
  // wallet (a batch payment), or the wallet twice. Free ones are those no proof has taken and no
  // other intent owns (a sent-back arrival carries its intent in matched_ref); the one of an
  // expected amount first.
  const intoWallet = logs.filter((l) => l.to_address === txTo && l.token === token?.address.toLowerCase());
  const free = intoWallet
    .filter((l) => isFree(l.matched_as) && (l.matched_ref === null || l.matched_ref === intentId))
    .sort((a, b) => Number(isExpected(b)) - Number(isExpected(a)));
  return { intoWallet, free };
}

/** What lockPayingLogs found: the logs that pay the intent, and the free logs it could lock. */
export interface PayingLogs {
  /** The logs that pay it (exact, the lone log, or a split); null when none does (or it waits). */
  paying: TransferRow[] | null;
  /** The free logs locked, in walletLogs' order. */
  lockedFree: TransferRow[];
  /** Whether every free log was locked (none is held by another matcher right now). */
  noneHeld: boolean;
}

/** Locks the free logs and picks those that pay the intent (payingLogs). */
export async function lockPayingLogs(
  tx: DbExecutor,
  intentId: string,
  logs: WalletLogs,
  expected: bigint[],
): Promise<PayingLogs> {
  const { free } = logs;
  // Locked in that order, skipping rows another matcher holds; the lock re-reads each row, so one
  // a proof took since the logs were read (proveIntentPayment's finalLogs) is left out.
  const locked = (
    await executePrepared<TransferRow>(
      tx,
      sql`
      select ${transferColumns} from chain_transfers
      where id = any(${sql.param(free.map((l) => l.id))}::bigint[]) and state = 'final'
        and (matched_as is null or (matched_as not like '%payment%' and matched_as not like '%claim_link_refund%'))
        and (matched_ref is null or matched_ref = ${intentId})
      for update skip locked`,
    )
  ).rows;
  const lockedFree = free.flatMap((l) => locked.filter((r) => r.id === l.id));
  const noneHeld = locked.length === free.length;
  return {
    paying: payingLogs(lockedFree, noneHeld, logs.intoWallet.length, expected),
    lockedFree,
    noneHeld,
  };
}

/**
 * The free logs that pay the intent, or null (it waits): a log of an expected amount; else the
 * transaction's one log into the wallet, whatever its amount (booked at the chain's value, a
 * mismatch, unless a top-up completes it); else several logs whose sum is an expected amount (one
 * payment split over transfers, as recon's matching sums them). A split is sought only when no
 * free log is held by another matcher: the held one may be the exact log, and its matcher proves
 * the intent once this transaction commits.
 */
function payingLogs(
  lockedFree: TransferRow[],
  noneHeld: boolean,
  intoWallet: number,
  expected: bigint[],
): TransferRow[] | null {
  const exact = lockedFree.find((l) => expected.includes(BigInt(l.value)));
  if (exact) return [exact];
  if (intoWallet === 1) return lockedFree[0] ? [lockedFree[0]] : null;
  if (!noneHeld) return null;
  return fewestSummingTo(lockedFree, expected, 2);
}

/** Most subsets a split search tries before giving up (the logs then wait the grace, then rule 9). */
const SPLIT_SEARCH_BUDGET = 20_000;

/**
 * The fewest logs (at least `minSize`) whose values sum to an expected amount, the earliest in
 * block and log order first among those of one size, so the choice is the same on every call.
 * Values are never negative, so a partial sum above every target ends its branch. Null when none,
 * or when the search would cost more than SPLIT_SEARCH_BUDGET subsets.
 */
export function fewestSummingTo<T extends { block_number: string; log_index: number; value: string }>(
  logs: T[],
  expected: bigint[],
  minSize: number,
): T[] | null {
  const candidates = logs
    .filter((l) => BigInt(l.value) > 0n)
    .sort((a, b) => Number(BigInt(a.block_number) - BigInt(b.block_number)) || a.log_index - b.log_index);
  if (expected.length === 0 || candidates.length < minSize) return null;
  const values = candidates.map((l) => BigInt(l.value));
  let max = 0n; // (bigint: no Math.max)
  for (const v of expected) if (v > max) max = v;
  let budget = SPLIT_SEARCH_BUDGET;
  const pick: number[] = [];
  const search = (from: number, left: number, sum: bigint): boolean => {
    if (left === 0) return expected.includes(sum);
    for (let i = from; i <= values.length - left; i++) {
      if (--budget < 0) return false;
      const next = sum + (values[i] as bigint);
      if (next > max) continue;
      pick.push(i);
      if (search(i + 1, left - 1, next)) return true;
      pick.pop();
    }
    return false;
  };
  for (let size = minSize; size <= values.length && budget > 0; size++) {
    if (search(0, size, 0n)) return pick.map((i) => candidates[i] as T);
  }
  return null;
}

/**
 * A log no proof has taken: its inflow undecided (only the sender's side may be: an owner transfer
 * out of another wallet of ours), or booked to suspense (a proof may move it); never a refund.
 */
function isFree(matchedAs: string | null): boolean {
  return matchedAs === null || (!matchedAs.includes('payment') && !matchedAs.includes('claim_link_refund'));
}
