import { StablebooksError } from '../errors/stablebooksError.ts';
import type { AccountType } from '../ledger/accounts.ts';
import { formatDecimalAmount } from '../money/decimalAmount.ts';
import { type ValuedEntry, valueEntry } from '../valuation/valueEntry.ts';
import type { IntentRate, RateBook } from '../valuation/valueLedger.ts';

/**
 * The journal export (`stablebooks export`): every ledger entry of a period as a transaction of
 * hledger, beancount or ledger, or as CSV rows, with the balances before the period as one
 * opening transaction. README.md, "Exporting the books", states its rules.
 *
 * Glossary
 * - period: half-open [from, to) by `occurred_at` (when the movement happened), UTC; either end
 *   may be open;
 * - opening balances: each account's balance over the postings before `from`;
 * - commodity: what a tool counts an amount in; one per token and chain (`USDT.1`, `USDT.56`),
 *   since the same symbol on two chains is two assets.
 */
export const EXPORT_FORMATS = ['hledger', 'beancount', 'ledger', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Input the export refuses before writing anything (an unknown store, an empty period). */
export class ExportInputError extends StablebooksError {
  override readonly name = 'ExportInputError';
  readonly retryable = false;
}

/** One row of ledger_accounts, as the export names it. */
export interface ExportAccount {
  id: bigint;
  code: string;
  type: AccountType;
  storeId: string;
  chainId: number;
  token: string;
  symbol: string;
  decimals: number;
  asset: string;
  /** The row of the chart without its top level: `wallet` for `assets:wallet`. */
  kindName: string;
}

/** A token on a chain: the unit of a commodity. */
export interface ExportAsset {
  asset: string;
  chainId: number;
  token: string;
  symbol: string;
  decimals: number;
  /** The commodity symbol every format uses: `<SYMBOL>.<chain id>`, e.g. `USDT.56`. */
  commodity: string;
}

export interface ExportPosting {
  account: ExportAccount;
  /** Base units; positive = debit, negative = credit. */
  amount: bigint;
}

/** One ledger entry with what the formats print about it. */
export interface ExportEntry {
  id: bigint;
  kind: string;
  occurredAt: Date;
  storeId: string;
  refType: string;
  refId: string;
  reversesEntryId: bigint | null;
  memo: string | null;
  /** checkout_intents.order_id of the entry's intent, when it has one. */
  orderId: string | null;
  /** The payout of the entry's claim link (payouts.id, payouts.reference_id), when known. */
  payoutId: string | null;
  payoutReference: string | null;
  /** Transaction hashes the entry's metadata carries, by their metadata key. */
  txHashes: Array<[key: string, hash: string]>;
  /**
   * Its intent's own rate (null: none), read only for a valued export (entryPages' intentRates);
   * absent otherwise.
   */
  intentRate?: IntentRate | null;
  postings: ExportPosting[];
}

/** Everything the formats need before the first entry: the chart, the commodities, the period. */
export interface ExportBooks {
  format: ExportFormat;
  storeId: string | null;
  from: Date | null;
  to: Date | null;
  /** Accounts of the export (every account of the store, or of every store), by code. */
  accounts: ExportAccount[];
  assets: ExportAsset[];
  /** The UTC date on or before every dated line of the file (beancount opens accounts on it). */
  startDate: string;
  /** `--value CUR`: each posting's value in CUR (docs/accounting.md, "Valuation"); null without. */
  valuation: ExportValuation | null;
}

/** What a writer needs to value an entry's postings. */
export interface ExportValuation {
  currency: string;
  minorUnit: number;
  rateOn: RateBook;
}

/** An entry's postings valued at its UTC day's rates (a payment's own rate first), for any format. */
export function valueExportEntry(e: ExportEntry, valuation: ExportValuation): ValuedEntry {
  const day = utcDate(e.occurredAt);
  // Absent is not "no intent rate": valuing without it would silently use the day's rate instead.
  if (e.intentRate === undefined) throw new Error(`export: entry ${e.id} was read without its intent rate`);
  const intent = e.intentRate;
  return valueEntry(
    e.postings.map((p) => ({
      accountCode: p.account.code,
      symbol: p.account.symbol,
      decimals: p.account.decimals,
      amount: p.amount,
    })),
    (symbol) => valuation.rateOn(e.storeId, day, symbol, intent),
    valuation.minorUnit,
  );
}

/** Why a valued export leaves an entry in tokens, the same words in every format. */
export function unvaluedReason(e: ExportEntry, valued: ValuedEntry, currency: string): string {
  return `no ${currency} rate for ${valued.missing.join(' or ')} on ${utcDate(e.occurredAt)}`;
}

/** Balances before `from`, per account (zero balances left out). */
export interface OpeningBalances {
  /** The period's start; the opening transaction is dated on its UTC date. */
  at: Date;
  lines: ExportPosting[];
}

/** One format: text for the declarations, the opening balances, and each entry, in that order. */
export interface JournalWriter {
  header(): string;
  opening(opening: OpeningBalances): string;
  entry(entry: ExportEntry): string;
  /** `--value` with a period end: the closing rates, after the entries (see closingPrices). */
  closing?(): string;
  /** Lines for stderr after the export (a precision the tool cannot hold), or none. */
  warnings(): string[];
}

/** A commodity's closing rate in the functional currency; null where no rate applies that day. */
export interface ClosingPrice {
  asset: ExportAsset;
  rate: string | null;
}

/**
 * `--value` with `--to`: each commodity's rate on the closing day, the day before the period's end
 * (UTC), which is the day valueLedger revalues the holdings at, chosen by the same rule (imported,
 * then par; an intent's own rate is for its payment only, never a closing rate). So a tool's
 * `bal -V` at the period's end answers the holdings' closing values, and `-V` less `-B` their
 * unrealised FX. Par is per store: a commodity whose stores' rates differ gets no single price.
 * Null without a valuation or a period end (no closing day to revalue at).
 */
export function closingPrices(books: ExportBooks): { date: string; prices: ClosingPrice[] } | null {
  const v = books.valuation;
  if (v === null || books.to === null) return null;
  const date = utcDate(new Date(books.to.getTime() - 1));
  const prices = books.assets.map((asset) => {
    const stores = new Set(books.accounts.filter((a) => a.asset === asset.asset).map((a) => a.storeId));
    const rates = new Set([...stores].map((s) => v.rateOn(s, date, asset.symbol, null)?.rate.text ?? null));
    const [rate = null] = rates;
    return { asset, rate: rates.size === 1 ? rate : null };
  });
  return { date, prices };
}

/**
 * The closing prices as a footer, one code path for the formats: `directive` writes one price in
 * its tool's syntax; a commodity without a rate gets a comment instead, so a market value shows
 * its balances in tokens, never as 0. Empty without a closing day.
 */
export function closingSection(
  books: ExportBooks,
  directive: (date: string, asset: ExportAsset, rate: string, currency: string) => string,
): string {
  const closing = closingPrices(books);
  const currency = books.valuation?.currency;
  if (closing === null || currency === undefined) return '';
  let out = `; closing rates in ${currency} on ${closing.date}, the period's last day: the holdings' market value at its end\n`;
  for (const { asset, rate } of closing.prices)
    out +=
      rate === null
        ? `; no ${currency} closing rate for ${asset.commodity} on ${closing.date}: no price, its holdings are not revalued\n`
        : `${directive(closing.date, asset, rate, currency)}\n`;
  return out;
}

/** The UTC calendar date of a time: `2026-11-01`. */
export function utcDate(time: Date): string {
  return time.toISOString().slice(0, 10);
}

/**
 * Base units as a decimal with every one of the token's decimals (`9.900000` for 6), through the
 * project's formatter: exact for any size, never through a JavaScript number.
 */
export function fixedDecimal(units: bigint, decimals: number): string {
  const canonical = formatDecimalAmount(units, decimals);
  if (decimals === 0) return canonical;
  const [whole, fraction = ''] = canonical.split('.');
  return `${whole}.${fraction.padEnd(decimals, '0')}`;
}

/** Whether the amounts of one commodity sum to zero in these lines (an entry, the opening). */
export function imbalance(lines: readonly ExportPosting[]): Map<string, bigint> {
  const sums = new Map<string, bigint>();
  for (const l of lines) sums.set(l.account.asset, (sums.get(l.account.asset) ?? 0n) + l.amount);
  for (const [asset, sum] of sums) if (sum === 0n) sums.delete(asset);
  return sums;
}

/**
 * Gives each item a name, keeping names unique: items whose names collide get `-<key>` appended
 * (a store id that only differs by characters a tool cannot hold), so no two accounts or
 * commodities merge in a tool.
 */
export function uniqueNames<T>(items: readonly T[], name: (item: T) => string, key: (item: T) => string) {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(name(item), (counts.get(name(item)) ?? 0) + 1);
  const names = new Map<T, string>();
  for (const item of items) {
    const n = name(item);
    names.set(item, (counts.get(n) ?? 0) > 1 ? `${n}-${key(item)}` : n);
  }
  return names;
}

/** Single-line text for a description or a tag value: no control characters, single spaces. */
export function oneLine(text: string): string {
  return text
    .replace(/\p{Cc}+/gu, ' ')
    .replace(/ {2,}/g, ' ')
    .trim();
}

/** The tag naming an entry's reference, by ref_type; another type is tagged `ref: <type> <id>`. */
const REF_TAGS = new Map([
  ['checkout_intent', 'intent_id'],
  ['claim_link', 'claim_link_id'],
  ['chain_transfer', 'transfer_id'],
]);

/** Every tag key entryTags can print (ledger declares them, for --pedantic). */
export const TAG_KEYS = [
  'entry_id',
  'store_id',
  'intent_id',
  'claim_link_id',
  'transfer_id',
  'ref',
  'order_id',
  'payout_id',
  'payout_reference',
  'reverses_entry_id',
  'tx_hash',
  'tx_hash_2',
  'funding_tx_hash',
  'refund_tx_hash',
  'memo',
] as const;

/** What identifies an entry, by tool-neutral key, in the order every format prints them. */
export function entryTags(e: ExportEntry): Array<[key: string, value: string]> {
  const tags: Array<[string, string]> = [
    ['entry_id', e.id.toString()],
    ['store_id', e.storeId],
  ];
  const refKey = REF_TAGS.get(e.refType);
  tags.push(refKey ? [refKey, e.refId] : ['ref', refText(e)]);
  if (e.orderId !== null) tags.push(['order_id', e.orderId]);
  if (e.payoutId !== null) tags.push(['payout_id', e.payoutId]);
  if (e.payoutReference !== null) tags.push(['payout_reference', e.payoutReference]);
  if (e.reversesEntryId !== null) tags.push(['reverses_entry_id', e.reversesEntryId.toString()]);
  for (const [key, hash] of e.txHashes) tags.push([key, hash]);
  if (e.memo !== null && e.memo !== '') tags.push(['memo', e.memo]);
  return tags;
}

/** The reference an entry is about, as people read it: `checkout_intent intent-1`. */
export function refText(e: ExportEntry): string {
  return `${e.refType} ${e.refId}`;
}
