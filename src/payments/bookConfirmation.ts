import { sql } from 'drizzle-orm';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { DbExecutor } from '../db/database.ts';
import { type EventDraft, paymentBookedId, recordEvent, tokenData } from '../events/recordEvent.ts';
import type { FindingDraft } from '../findings/finding.ts';
import { resolveFinding } from '../findings/recordFinding.ts';
import { accountCode, type Token } from '../ledger/accounts.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import type { EntryDraft, RuleOutcome } from '../ledger/entryDraft.ts';
import { IdempotencyConflictError } from '../ledger/errors.ts';
import { type PostedEntry, postEntry } from '../ledger/postEntry.ts';
import { reversalCount } from '../ledger/reversalCount.ts';
import { checkoutConfirmed } from '../ledger/rules/checkoutRules.ts';
import { AmountFormatError, formatDecimalAmount, POSTING_DIGITS } from '../money/decimalAmount.ts';
import type { DeferredBookings } from './deferredBookings.ts';

/** What rule 1 needs of a CONFIRMED intent, as stored in checkout_intents (decimal strings as sent). */
export interface ConfirmedIntentFacts {
  intentId: string;
  storeId: string;
  chainId: number | null;
  coinContract: string | null;
  coinSymbol: string | null;
  amountCoins: string;
  actualPaidAmount: string | null;
  serviceFeeAmount: string | null;
  netIncomeAmount: string | null;
  amountCents: bigint | null;
  currency: number | null;
  currencyRate: string | null;
  txHash: string | null;
  txHash2: string | null;
  /** When we first saw CONFIRMED: the entry's occurred_at, fixed once. */
  confirmedAt: Date;
  /** The rule-1 revision to book (reversed confirmations before it); read from the ledger when absent. */
  revision?: number;
  /**
   * The intent's open findings of BOOKING_FINDINGS kinds, when the caller read them already (the
   * facts update of applyIntentSnapshot does, at no extra round trip); read here when absent.
   */
  openBookingFindings?: readonly string[];
}

/**
 * The findings that say rule 1 could not book a CONFIRMED intent yet. Each clears once rule 1's
 * entry is in the books (a later answer with the amounts, a registry or configuration fix and a
 * replay), so they are resolved then, in the same transaction.
 */
export const BOOKING_FINDINGS = [
  'confirmed_without_amounts',
  'unknown_token',
  'amount_format_error',
] as const;

export interface BookedConfirmation {
  /** The entry this call wrote, or null (already in the books, waiting, or not bookable). */
  posted: PostedEntry | null;
  findings: FindingDraft[];
  /**
   * Whether rule 1 is done with this intent: its entry is in the books, or it waits only for the
   * chain's proof of the net (which settles it without the service). False when the facts cannot
   * be booked yet (no amounts, unknown token, an amount the token cannot hold): the intent is
   * then polled on, since a later answer or a configuration fix can still book it.
   */
  settled: boolean;
}

/**
 * Posts rule 1 for a confirmed intent, from a webhook, a poll or the chain. `provenNet` is what
 * the chain proved reached the merchant wallet: it settles an intent whose reported P - F != N.
 * Returns the findings for the caller to record beside the fact.
 */
export async function bookConfirmation(
  tx: DbExecutor,
  deps: { chains: ChainRegistry; accounts?: AccountCache },
  facts: ConfirmedIntentFacts,
  provenNet?: bigint,
  /**
   * A webhook batch's writes (processInboxBatch): a first booking (revision 0) joins them instead
   * of being written now, and the result's `posted` is null.
   */
  deferred?: DeferredBookings,
): Promise<BookedConfirmation> {
  const ref = { type: 'checkout_intent', id: facts.intentId };
  const token =
    facts.chainId !== null && facts.coinContract
      ? deps.chains.token(facts.chainId, facts.coinContract)
      : undefined;
  if (!token) {
    return {
      posted: null,
      settled: false,
      findings: [
        {
          kind: 'unknown_token',
          severity: 'critical',
          ref,
          details: {
            chain_id: facts.chainId,
            coin_contract: facts.coinContract,
            coin_symbol: facts.coinSymbol,
          },
        },
      ],
    };
  }
  if (facts.actualPaidAmount === null || facts.serviceFeeAmount === null || facts.netIncomeAmount === null) {
    return {
      posted: null,
      settled: false,
      findings: [{ kind: 'confirmed_without_amounts', severity: 'warning', ref, details: { status: 20 } }],
    };
  }
  const oversized = [
    facts.amountCoins,
    facts.actualPaidAmount,
    facts.serviceFeeAmount,
    facts.netIncomeAmount,
  ].find((amount) => exceedsPostingDigits(amount, token.decimals));
  if (oversized !== undefined) {
    // Its base units would not fit a posting (numeric(78,0)): PostgreSQL would refuse the entry
    // on every retry. Recorded like an amount finer than the token, for a person.
    return unbookable(ref, token, {
      amount: oversized,
      decimals: token.decimals,
      reason: `more than ${POSTING_DIGITS} digits in base units`,
    });
  }
  let outcome: RuleOutcome;
  const revision = facts.revision ?? (await confirmedRevision(tx, facts.intentId));
  try {
    outcome = checkoutConfirmed({
      storeId: facts.storeId,
      intentId: facts.intentId,
      occurredAt: facts.confirmedAt,
      token,
      amountCoins: facts.amountCoins,
      actualPaidAmount: facts.actualPaidAmount,
      serviceFeeAmount: facts.serviceFeeAmount,
      netIncomeAmount: facts.netIncomeAmount,
      fiat: { amountCents: facts.amountCents, currency: facts.currency, currencyRate: facts.currencyRate },
      txHash: facts.txHash,
      txHash2: facts.txHash2,
      provenNet,
      revision,
    });
  } catch (err) {
    if (!(err instanceof AmountFormatError)) throw err;
    // An amount finer than the token (docs/decisions.md, "Amounts in models") cannot be booked,
    // but the intent's facts are still recorded by the caller: a person decides, the job does not
    // fail for ever.
    return unbookable(ref, token, { amount: err.text, decimals: err.decimals });
  }
  if (!outcome.entry) return { posted: null, findings: outcome.findings, settled: true };
  if (deferred && revision === 0) {
    const entry = outcome.entry;
    deferred.add({
      entry,
      event: (posted) => bookedEvent(facts, token, revision, posted, entry),
    });
    await resolveBookingFindings(tx, facts);
    return { posted: null, findings: outcome.findings, settled: true };
  }
  try {
    const posted = await postEntry(tx, outcome.entry, { accounts: deps.accounts });
    // The event goes with the entry, in its transaction: only an entry written now has none yet.
    if (posted.created) await recordEvent(tx, bookedEvent(facts, token, revision, posted, outcome.entry));
    await resolveBookingFindings(tx, facts);
    return { posted, findings: outcome.findings, settled: true };
  } catch (err) {
    if (!(err instanceof IdempotencyConflictError)) throw err;
    const changed = await amountsChangedSinceBooked(tx, err.existingEntryId, outcome.entry);
    await resolveBookingFindings(tx, facts);
    return { posted: null, findings: [...outcome.findings, ...changed], settled: true };
  }
}

/** `payment.booked`: the amounts as the service sent them, and N as booked (the in_transit debit). */
function bookedEvent(
  facts: ConfirmedIntentFacts,
  token: Token,
  revision: number,
  posted: PostedEntry,
  entry: EntryDraft,
): EventDraft {
  const net = entry.lines.find((l) => l.account.kind === 'assets:in_transit')?.amount;
  return {
    id: paymentBookedId(facts.intentId, revision),
    type: 'payment.booked',
    occurredAt: facts.confirmedAt,
    data: {
      intent_id: facts.intentId,
      store_id: facts.storeId,
      entry_id: posted.id.toString(),
      revision,
      ...tokenData(token),
      amount: facts.amountCoins,
      paid_amount: facts.actualPaidAmount,
      fee_amount: facts.serviceFeeAmount,
      net_amount: net === undefined ? facts.netIncomeAmount : formatDecimalAmount(net, token.decimals),
      amount_cents: facts.amountCents === null ? null : facts.amountCents.toString(),
      currency: facts.currency,
      tx_hash: facts.txHash2 ?? facts.txHash,
      confirmed_at: facts.confirmedAt.toISOString(),
    },
  };
}

/**
 * Rule 1's entry is in the books (posted now, replayed, or booked before with other metadata):
 * what kept it out (BOOKING_FINDINGS) has cleared for this intent. Nothing is sent when the caller
 * read that none is open, the usual case.
 */
async function resolveBookingFindings(tx: DbExecutor, facts: ConfirmedIntentFacts): Promise<void> {
  const ref = { type: 'checkout_intent', id: facts.intentId };
  const open =
    facts.openBookingFindings ??
    (
      await tx.execute<{ kind: string }>(sql`
        select kind from findings
        where ref_type = ${ref.type} and ref_id = ${ref.id} and resolved_at is null
          and kind = any(${sql.param([...BOOKING_FINDINGS])}::text[])`)
    ).rows.map((r) => r.kind);
  for (const kind of open) await resolveFinding(tx, kind, ref);
}

/**
 * Whether a decimal amount, in base units of a token with `decimals`, has more digits than a
 * posting holds. Its whole part's significant digits plus the decimals are exactly the digits of
 * its base units (the fraction adds none beyond them: digits past the decimals are zeros, which
 * are dropped, or an AmountFormatError).
 */
function exceedsPostingDigits(amount: string | null, decimals: number): boolean {
  if (amount === null) return false;
  const whole = (amount.split('.')[0] ?? '').replace(/^0+/, '');
  return whole.length + decimals > POSTING_DIGITS;
}

/**
 * The revision of an intent's live rule-1 entry, or of the next one to book: how many of its
 * rule-1 entries were reversed (see checkoutConfirmedKey).
 */
export function confirmedRevision(tx: DbExecutor, intentId: string): Promise<number> {
  return reversalCount(tx, { type: 'checkout_intent', id: intentId }, 'checkout.confirmed');
}

/**
 * Rule 1 was booked from an earlier observation and this one differs. The entry is immutable and
 * keeps what was known when it was booked: a field learnt later (tx_hash_2, a fee written another
 * way) changes the facts row, not the books. Only different amounts are a finding, critical: the
 * service changed a confirmed payment's figures, and a person decides whether to reverse.
 */
async function amountsChangedSinceBooked(
  tx: DbExecutor,
  entryId: bigint,
  draft: EntryDraft,
): Promise<FindingDraft[]> {
  const { rows } = await tx.execute<{ code: string; amount: string }>(sql`
    select a.code, p.amount::text from ledger_postings p join ledger_accounts a on a.id = p.account_id
    where p.entry_id = ${entryId.toString()}::bigint`);
  const sum = (lines: Array<[string, bigint]>) => {
    const byAccount = new Map<string, bigint>();
    for (const [code, amount] of lines) byAccount.set(code, (byAccount.get(code) ?? 0n) + amount);
    return byAccount;
  };
  const booked = sum(rows.map((r) => [r.code, BigInt(r.amount)]));
  const now = sum(draft.lines.map((l) => [accountCode(l.account), l.amount]));
  const same = booked.size === now.size && [...booked].every(([code, amount]) => now.get(code) === amount);
  if (same) return [];
  const show = (m: Map<string, bigint>) =>
    Object.fromEntries([...m].map(([code, a]) => [code, a.toString()]));
  return [
    {
      kind: 'confirmed_amounts_changed',
      severity: 'critical',
      ref: draft.ref,
      details: { entry_id: entryId.toString(), booked: show(booked), observed: show(now) },
    },
  ];
}

/**
 * Rule 1 cannot book an amount (finer than the token, or too long for a posting): the caller
 * still records the intent's facts, and a critical finding asks a person; the job does not fail
 * for ever.
 */
function unbookable(
  ref: FindingDraft['ref'],
  token: Token,
  details: { amount: string; decimals: number; reason?: string },
): BookedConfirmation {
  return {
    posted: null,
    settled: false,
    findings: [
      {
        kind: 'amount_format_error',
        severity: 'critical',
        ref,
        details: { ...details, token: token.symbol, chain_id: token.chainId },
      },
    ],
  };
}
