import { sql } from 'drizzle-orm';
import { markApplied, type TransferRow, transferColumns, transferFact } from '../chain/transferRow.ts';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import type { FindingDraft } from '../findings/finding.ts';
import { resolveFinding } from '../findings/recordFinding.ts';
import type { Token } from '../ledger/accounts.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import { type PostedEntry, postEntry, reverseEntry } from '../ledger/postEntry.ts';
import { chainTransferDetails, chainTransferId } from '../ledger/rules/chainTransferFact.ts';
import { paymentProven, unmatchedTransferKey } from '../ledger/rules/chainTransferRules.ts';
import { checkoutConfirmedKey } from '../ledger/rules/checkoutRules.ts';
import { formatDecimalAmount, parseDecimalAmount, sameDecimalAmount } from '../money/decimalAmount.ts';
import { bookConfirmation } from './bookConfirmation.ts';

export interface ProofResult {
  /** The (first) rule-2 entry this call posted. */
  proven: PostedEntry | null;
  findings: FindingDraft[];
  /** The (first) chain_transfers row this call matched to the intent (as proof or mismatch), if any. */
  matchedRowId: string | null;
  /** Every row this call matched to the intent: one, or several when the payment was split. */
  matchedRowIds: string[];
}

/** The intent's columns rule 2 reads; applyIntentSnapshot passes the row its update returned. */
export type IntentRow = {
  id: string;
  store_id: string;
  status: number | null;
  chain_id: string | null;
  coin_contract: string | null;
  coin_symbol: string | null;
  amount_coins: string | null;
  actual_paid_amount: string | null;
  service_fee_amount: string | null;
  net_income_amount: string | null;
  amount_cents: string | null;
  currency: number | null;
  currency_rate: string | null;
  tx_hash: string | null;
  tx_hash_2: string | null;
  tx_to: string | null;
  confirmed_at: Date | null;
};

/** The columns of IntentRow, as a select list of checkout_intents. */
export const intentRowColumns = sql.raw(
  'id, store_id, status, chain_id::text, coin_contract, coin_symbol, amount_coins, actual_paid_amount, ' +
    'service_fee_amount, net_income_amount, amount_cents::text, currency, currency_rate, tx_hash, tx_hash_2, ' +
    'tx_to, confirmed_at',
);

/**
 * Rule 2 for one confirmed intent: when the transfer that credits the merchant wallet (tx_hash_2
 * on the temporary-wallet route, tx_hash when paid directly) is final on chain and matches token,
 * recipient and N, debit wallet N, credit in_transit N. Called from both sides, whichever learns
 * last: the intent's confirmation (applyIntentSnapshot) and the transfer's finality (the chain
 * matcher). An intent whose reported P - F != N gets its rule-1 entry here, from the proven net.
 * A transfer booked to suspense before its intent was known (rule 9) is moved: that entry is
 * reversed and its finding resolved. Runs in the caller's transaction; the caller holds the
 * intent's row lock. Without a final transfer it does nothing: the money stays in in_transit.
 * One transaction may pay several intents (a batch payment): each takes a log no proof has taken,
 * the one of its own N first (docs/decisions.md, "One transaction can pay several intents"). Else
 * the transaction's one log into the wallet is booked at its own value with a critical
 * `payment_amount_mismatch` (the rest of N stays in in_transit for a person; an excess above N goes
 * to suspense, never a negative in_transit), and several free
 * logs whose sum is N prove it together (one rule-2 entry per log, each under its own inclusion's
 * key, so rule 3 unwinds each). Rule 1 is read from its live entry: one reversed by rule 4 holds
 * nothing in in_transit.
 *
 * Locks: the chain matcher locks the transfer row, then the intent; the intent's side locks the
 * intent, then the transfer with SKIP LOCKED. A transfer row another transaction holds is being
 * matched right now, and that matcher is waiting for this intent: it proves the payment once this
 * transaction commits. So the two sides never wait on each other in a cycle (no deadlock).
 */
export async function proveIntentPayment(
  tx: DbExecutor,
  deps: { chains: ChainRegistry; accounts?: AccountCache },
  intentId: string,
  /** The intent as this transaction last wrote it (saves reading it again). */
  known?: IntentRow,
): Promise<ProofResult> {
  const none: ProofResult = { proven: null, findings: [], matchedRowId: null, matchedRowIds: [] };
  const intent =
    known ??
    (
      await tx.execute<IntentRow>(
        sql`select ${intentRowColumns} from checkout_intents where id = ${intentId}`,
      )
    ).rows[0];
  const hash = intent?.tx_hash_2 ?? intent?.tx_hash;
  if (intent?.status !== 20 || !hash || !intent.tx_to || intent.chain_id === null) return none;
  const txHash = hash.toLowerCase();
  const txTo = intent.tx_to.toLowerCase();
  // The transaction's final logs, read once (no lock): most calls come from a confirmation whose
  // transfer is not final yet, and end here.
  const logs = (
    await executePrepared<TransferRow>(
      tx,
      sql`
      select ${transferColumns} from chain_transfers
      where chain_id = ${intent.chain_id}::bigint and tx_hash = ${txHash} and state = 'final'
      order by log_index`,
    )
  ).rows;
  if (logs.length === 0) return none;
  // One decision per intent: once logs of its transaction proved it (at N, or at another amount
  // with a mismatch finding), later calls from either side change nothing.
  if (logs.some((l) => l.matched_ref === intentId && /payment_(proof|mismatch)/.test(l.matched_as ?? ''))) {
    return none;
  }
  // A rule-1 entry that was reversed (rule 4: confirmed, then failed) holds nothing in in_transit:
  // without a live one the intent is treated as rule 1 waiting, and a proof books its next
  // revision from the chain's value below.
  let inTransit = await inTransitOf(tx, intentId);
  const expectedToken = intent.coin_contract
    ? deps.chains.token(Number(intent.chain_id), intent.coin_contract)
    : undefined;
  // The amounts that would prove it: N as rule 1 booked it, or, while rule 1 waits for the chain
  // (reported P - F != N), the reported N and P - F.
  const expected =
    inTransit !== null ? [inTransit] : expectedToken ? reportedNets(intent, expectedToken.decimals) : [];
  const isExpected = (l: TransferRow) => expected.includes(BigInt(l.value));
  // Its logs into tx_to in the intent's token: one transaction may pay several intents into one
  // wallet (a batch payment), or the wallet twice. Free ones are those no proof has taken and no
  // other intent owns (a sent-back arrival carries its intent in matched_ref); the one of an
  // expected amount first.
  const intoWallet = logs.filter(
    (l) => l.to_address === txTo && l.token === expectedToken?.address.toLowerCase(),
  );
  const free = intoWallet
    .filter((l) => isFree(l.matched_as) && (l.matched_ref === null || l.matched_ref === intentId))
    .sort((a, b) => Number(isExpected(b)) - Number(isExpected(a)));
  if (free.length === 0) {
    // Nothing into the wallet to prove it with. A transaction whose one log went elsewhere (another
    // recipient or token) is worth rule 2's findings for a person; nothing is marked, so a log
    // that comes later still proves it.
    const only = logs.length === 1 && intoWallet.length === 0 ? logs[0] : undefined;
    if (!only || inTransit === null || !expectedToken) return none;
    const fact = transferFact(only);
    const { findings } = paymentProven({
      storeId: intent.store_id,
      intentId,
      transfer: fact,
      token: deps.chains.token(fact.chainId, fact.tokenAddress) ?? null,
      expected: { token: expectedToken, recipient: intent.tx_to as `0x${string}`, amount: inTransit },
    });
    return { ...none, findings };
  }
  // Locked in that order, skipping rows another matcher holds; the lock re-reads each row, so one
  // a proof took since the read above is left out.
  const locked = (
    await executePrepared<TransferRow>(
      tx,
      sql`
      select ${transferColumns} from chain_transfers
      where id = any(${sql.param(free.map((l) => l.id))}::bigint[]) and state = 'final'
        and (matched_as is null or (matched_as like '%transfer_in_unmatched%' and matched_as not like '%payment%'))
        and (matched_ref is null or matched_ref = ${intentId})
      for update skip locked`,
    )
  ).rows;
  const lockedFree = free.flatMap((l) => locked.filter((r) => r.id === l.id));
  const paying = payingLogs(lockedFree, locked.length === free.length, intoWallet.length, expected);
  if (!paying) return none;
  const paid = paying.reduce((sum, l) => sum + BigInt(l.value), 0n);

  const findings: FindingDraft[] = [];
  if (inTransit === null && intent.amount_coins !== null && intent.confirmed_at !== null) {
    // Rule 1 waited for the chain (reported P - F != N): the proven value settles it.
    const booked = await bookConfirmation(
      tx,
      deps,
      {
        intentId,
        storeId: intent.store_id,
        chainId: Number(intent.chain_id),
        coinContract: intent.coin_contract,
        coinSymbol: intent.coin_symbol,
        amountCoins: intent.amount_coins,
        actualPaidAmount: intent.actual_paid_amount,
        serviceFeeAmount: intent.service_fee_amount,
        netIncomeAmount: intent.net_income_amount,
        amountCents: intent.amount_cents === null ? null : BigInt(intent.amount_cents),
        currency: intent.currency,
        currencyRate: intent.currency_rate,
        txHash: intent.tx_hash,
        txHash2: intent.tx_hash_2,
        confirmedAt: new Date(intent.confirmed_at),
      },
      paid,
    );
    findings.push(...booked.findings);
    inTransit = await inTransitOf(tx, intentId);
  }
  if (inTransit === null || !expectedToken) return { ...none, findings };

  // A lone log of another amount than N still reached the wallet: it is booked at the chain's
  // value (the wallet's account follows the chain), the rest of N stays in in_transit (or, above
  // N, the excess goes to suspense), and a critical finding asks a person to settle the difference.
  const mismatch = paid !== inTransit;
  if (mismatch) findings.push(amountMismatch(intent, expectedToken, paying, inTransit, paid));
  const ref = { type: 'checkout_intent', id: intentId };
  let proven: PostedEntry | null = null;
  for (const row of paying) {
    const fact = transferFact(row);
    // Rule 2 per log, at its own value (its key names its inclusion, so rule 3 unwinds it alone).
    const outcome = paymentProven({
      storeId: intent.store_id,
      intentId,
      transfer: fact,
      token: deps.chains.token(fact.chainId, fact.tokenAddress) ?? null,
      expected: { token: expectedToken, recipient: intent.tx_to as `0x${string}`, amount: fact.amount },
      // A lone log above N clears N from in_transit; the excess goes to suspense.
      ...(mismatch ? { inTransit } : {}),
    });
    findings.push(...outcome.findings);
    // What rule 9 booked on the row stays named (for rule 3), except the suspense entry a proof
    // reverses below.
    const kinds = (row.matched_as ?? '').split(',').filter((k) => k !== '');
    if (!outcome.entry) {
      // Nothing to book (a log of value 0): the intent is decided, a person looks.
      await markApplied(tx, row.id, [...kinds, 'payment_mismatch'], intentId, intent.store_id);
      continue;
    }
    if (kinds.includes('transfer_in_unmatched')) {
      const key = unmatchedTransferKey(fact, 'in');
      const booked = await tx.execute<{ id: string }>(
        sql`select id::text from ledger_entries where idempotency_key = ${key}`,
      );
      if (booked.rows[0]) {
        await reverseEntry(tx, BigInt(booked.rows[0].id), `transfer matched intent ${intentId}`);
      }
      await resolveFinding(tx, 'unmatched_transfer_in', {
        type: 'chain_transfer',
        id: chainTransferId(fact),
      });
    }
    const posted = await postEntry(tx, outcome.entry, { accounts: deps.accounts });
    proven ??= posted;
    const stillBooked = kinds.filter((k) => k !== 'transfer_in_unmatched');
    const marks = mismatch ? ['payment_proof', 'payment_mismatch'] : ['payment_proof'];
    await markApplied(tx, row.id, [...stillBooked, ...marks], intentId, intent.store_id);
  }
  // The payment is on chain: verification's findings about it (not found, reverted, no transfer;
  // a node that lagged at the grace) have cleared.
  if (proven) await resolveVerificationFindings(tx, ref);
  const matchedRowIds = paying.map((l) => l.id);
  return { proven, findings, matchedRowId: matchedRowIds[0] ?? null, matchedRowIds };
}

/**
 * The free logs that pay the intent, or null (it waits): a log of an expected amount; else the
 * transaction's one log into the wallet, whatever its amount (booked at the chain's value, a
 * mismatch); else several logs whose sum is an expected amount (one payment split over transfers,
 * as recon's matching sums them). A split is sought only when no free log is held by another
 * matcher: the held one may be the exact log, and its matcher proves the intent once this
 * transaction commits.
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
  return splitPayment(lockedFree, expected);
}

/** Most subsets a split search tries before giving up (the logs then wait the grace, then rule 9). */
const SPLIT_SEARCH_BUDGET = 20_000;

/**
 * The fewest logs (two or more) whose values sum to an expected amount, the earliest in log order
 * first among those of one size, so the choice is the same on every call. Values are never
 * negative, so a partial sum above every target ends its branch. Null when none, or when the
 * search would cost more than SPLIT_SEARCH_BUDGET subsets.
 */
function splitPayment<T extends { log_index: number; value: string }>(
  logs: T[],
  expected: bigint[],
): T[] | null {
  const candidates = logs.filter((l) => BigInt(l.value) > 0n).sort((a, b) => a.log_index - b.log_index);
  if (expected.length === 0 || candidates.length < 2) return null;
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
  for (let size = 2; size <= values.length && budget > 0; size++) {
    if (search(0, size, 0n)) return pick.map((i) => candidates[i] as T);
  }
  return null;
}

/** Rule 2 booked a log of another amount than N: a critical finding, for a person to settle. */
function amountMismatch(
  intent: IntentRow,
  token: Token,
  paying: TransferRow[],
  expected: bigint,
  actual: bigint,
): FindingDraft {
  const fmt = (u: bigint) => formatDecimalAmount(u, token.decimals);
  const [first] = paying;
  const over = actual > expected;
  return {
    kind: 'payment_amount_mismatch',
    severity: 'critical',
    ref: { type: 'checkout_intent', id: intent.id },
    details: {
      ...(first && paying.length === 1 ? chainTransferDetails(transferFact(first)) : {}),
      token: token.symbol,
      expected_amount: fmt(expected),
      actual_amount: fmt(actual),
      ...(over
        ? {
            to_suspense: fmt(actual - expected),
            what: 'the payment was booked at the value the chain shows; N cleared in_transit and the excess is in suspense',
          }
        : {
            left_in_transit: fmt(expected - actual),
            what: 'the payment was booked at the value the chain shows; the rest of N stays in in_transit',
          }),
    },
  };
}

/** Verification's findings of a payment not (yet) seen on chain (src/payments/verifyPayments.ts). */
export const VERIFICATION_FINDINGS = [
  'payment_tx_not_found',
  'payment_tx_reverted',
  'payment_transfer_missing',
];

/** Resolves the open verification findings of an intent whose payment is proven (one statement). */
async function resolveVerificationFindings(tx: DbExecutor, ref: FindingDraft['ref']): Promise<void> {
  await executePrepared(
    tx,
    sql`
    update findings set resolved_at = now()
    where kind = any(${sql.param(VERIFICATION_FINDINGS)}::text[]) and ref_type = ${ref.type} and ref_id = ${ref.id}
      and resolved_at is null`,
  );
}

/** A log no proof has taken: unmatched, or booked to suspense only (a proof may move it). */
function isFree(matchedAs: string | null): boolean {
  return (
    matchedAs === null || (matchedAs.includes('transfer_in_unmatched') && !matchedAs.includes('payment'))
  );
}

/** N as reported (net_income_amount) and P - F, in base units: what a proof may be while rule 1 waits. */
function reportedNets(intent: IntentRow, decimals: number): bigint[] {
  const parse = (text: string | null) => {
    if (text === null) return null;
    try {
      return parseDecimalAmount(text, decimals);
    } catch {
      return null;
    }
  };
  const n = parse(intent.net_income_amount);
  const p = parse(intent.actual_paid_amount);
  const f = parse(intent.service_fee_amount);
  return [n, p !== null && f !== null ? p - f : null].filter((v): v is bigint => v !== null && v >= 0n);
}

/**
 * N as rule 1 booked it: the in_transit debit of the intent's live rule-1 entry, the latest one
 * that has no reversal (rule 4), under `checkout:confirmed:<id>` or a revision of that key
 * (`...:r<n>`, booked again after a reversal); null when no rule-1 entry is live.
 */
export async function inTransitOf(tx: DbExecutor, intentId: string): Promise<bigint | null> {
  const key = checkoutConfirmedKey(intentId);
  const { rows } = await executePrepared<{ amount: string }>(
    tx,
    sql`
    select p.amount::text from ledger_entries e
    join ledger_postings p on p.entry_id = e.id
    join ledger_accounts a on a.id = p.account_id
    where e.ref_type = 'checkout_intent' and e.ref_id = ${intentId}
      and (e.idempotency_key = ${key} or starts_with(e.idempotency_key, ${`${key}:`}))
      and a.code like 'assets:in_transit:%'
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)
    order by e.id desc
    limit 1`,
  );
  return rows[0] ? BigInt(rows[0].amount) : null;
}

/**
 * A confirmation of a payment routed through a temporary wallet (the service kept a fee: paid
 * directly, the merchant wallet receives it all and there is none) read before the service
 * reported the sweep into the merchant wallet (tx_hash_2): what proves it on chain is not known
 * yet, so the intent is polled on until a read names it.
 */
export function awaitsSweepHash(intent: Pick<IntentRow, 'tx_hash_2' | 'service_fee_amount'>): boolean {
  if (intent.tx_hash_2 || intent.service_fee_amount === null) return false;
  return !sameDecimalAmount(intent.service_fee_amount, '0');
}
