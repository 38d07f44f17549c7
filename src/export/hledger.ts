import { formatFiat } from '../money/formatFiat.ts';
import { ROUNDING_ACCOUNT } from '../valuation/valueEntry.ts';
import {
  closingSection,
  type ExportAccount,
  type ExportAsset,
  type ExportBooks,
  type ExportEntry,
  type ExportPosting,
  type ExportValuation,
  entryTags,
  fixedDecimal,
  imbalance,
  type JournalWriter,
  type OpeningBalances,
  oneLine,
  refText,
  unvaluedReason,
  utcDate,
  valueExportEntry,
} from './exportModel.ts';
import { OPENING_ACCOUNT, plainAccountNames, TOP_LEVELS } from './naming.ts';

/**
 * hledger journal (also read by ledger's writer, src/export/ledger.ts, through the same shape).
 * Declared: each commodity with a sample amount of the token's full precision (hledger keeps up to
 * 255 decimal places and displays a declared commodity with its declared precision, so 18-decimal
 * balances print exactly), each account with its type, so `hledger check --strict` passes.
 * Transactions: `DATE * (entry id) <ref> | <kind>`, tags as `; key: value` comment lines.
 */
export function hledgerWriter(books: ExportBooks): JournalWriter {
  const names = plainAccountNames(books.accounts);
  const commodities = new Map(books.assets.map((a) => [a.asset, a]));
  const width = Math.max(OPENING_ACCOUNT.length, ...[...names.values()].map((n) => n.length));
  const nameOf = (a: ExportAccount) => names.get(a) ?? a.code;
  const amount = (p: Pick<ExportPosting, 'amount'> & { asset: string; decimals: number }) =>
    `${fixedDecimal(p.amount, p.decimals)} "${commodities.get(p.asset)?.commodity ?? p.asset}"`;
  const posting = (name: string, text: string) => `    ${name.padEnd(width)}  ${text}\n`;
  const tokens = (p: ExportPosting): [string, string] => [
    nameOf(p.account),
    amount({ amount: p.amount, asset: p.account.asset, decimals: p.account.decimals }),
  ];
  const lines = (postings: readonly ExportPosting[]) => postings.map((p) => posting(...tokens(p))).join('');
  return {
    header() {
      let out = `; stablebooks journal export for hledger\n${periodComment(books)}\n`;
      out +=
        '; One commodity per token and chain ("USDT.1" is USDT on chain 1); amounts carry every decimal of their token.\n\n';
      for (const a of books.assets) {
        const sample = fixedDecimal(1000n * 10n ** BigInt(a.decimals), a.decimals);
        out += `commodity ${a.decimals === 0 ? `${sample}.` : sample} "${a.commodity}"  ; ${a.symbol} on chain ${a.chainId}, contract ${a.token}, ${a.decimals} decimals\n`;
      }
      out += '\n';
      for (const [type, top] of TOP_LEVELS) out += `account ${top}  ; type: ${HLEDGER_TYPES[type]}\n`;
      for (const a of books.accounts) out += `account ${nameOf(a)}  ; code: ${a.code}\n`;
      if (books.valuation) {
        const v = books.valuation;
        out += `commodity ${fiatSample(v)}${v.minorUnit === 0 ? '.' : ''} "${v.currency}"  ; the functional currency\n`;
        out += `account ${ROUNDING_ACCOUNT}  ; the valuation's rounding line (docs/accounting.md, "Valuation")\n`;
      }
      return `${out}account ${OPENING_ACCOUNT}\n\n`;
    },
    opening(opening: OpeningBalances) {
      if (opening.lines.length === 0) return '';
      let out = `${utcDate(opening.at)} * opening balances | balances before ${opening.at.toISOString()}\n`;
      out += lines(opening.lines);
      for (const [asset, sum] of imbalance(opening.lines)) {
        const decimals = commodities.get(asset)?.decimals ?? 0;
        out += posting(OPENING_ACCOUNT, amount({ amount: -sum, asset, decimals }));
      }
      return `${out}\n`;
    },
    entry(e: ExportEntry) {
      let out = `${utcDate(e.occurredAt)} * (${e.id}) ${description(refText(e))} | ${description(e.kind)}\n`;
      for (const [key, value] of entryTags(e)) out += `    ; ${key}: ${tagValue(value)}\n`;
      const v = books.valuation;
      return `${out}${v ? totalCostLines(e, v, tokens, posting) : lines(e.postings)}\n`;
    },
    closing: () => closingSection(books, marketPrice),
    warnings: () => [],
  };
}

/**
 * `--value`, for hledger and ledger, which read the same syntax: each posting at its total cost in
 * the functional currency (`@@`, unsigned: the amount's sign applies), so `hledger bal -B` and
 * `ledger bal -B` answer the fiat balances; the rounding line in that currency closes the entry. An
 * entry with a posting no rate values carries no cost at all (a partial cost would not balance) and
 * says why in an `unvalued` tag: the tools then show it in tokens, never as 0.
 */
export function totalCostLines(
  e: ExportEntry,
  v: ExportValuation,
  tokens: (p: ExportPosting) => [name: string, amount: string],
  posting: (name: string, text: string) => string,
): string {
  const valued = valueExportEntry(e, v);
  if (valued.rounding === null)
    return `    ; unvalued: ${tagValue(unvaluedReason(e, valued, v.currency))}\n${e.postings.map((p) => posting(...tokens(p))).join('')}`;
  const fiat = (minor: bigint) => `${formatFiat(minor, v.minorUnit)} "${v.currency}"`;
  let out = '';
  e.postings.forEach((p, i) => {
    const value = valued.postings[i]?.value ?? 0n;
    const [name, amount] = tokens(p);
    out += posting(name, `${amount} @@ ${fiat(value < 0n ? -value : value)}`);
  });
  if (valued.rounding !== 0n) out += posting(ROUNDING_ACCOUNT, fiat(valued.rounding));
  return out;
}

/** A `P` directive, which hledger and ledger read alike: `P 2026-11-30 "USDT.1" 0.93 "EUR"`. */
export function marketPrice(date: string, asset: ExportAsset, rate: string, currency: string): string {
  return `P ${date} "${asset.commodity}" ${rate} "${currency}"`;
}

/** The functional currency's `commodity` sample amount, 1000 with its minor digits (`1000.00`). */
export function fiatSample(v: ExportValuation): string {
  return formatFiat(1000n * 10n ** BigInt(v.minorUnit), v.minorUnit);
}

const HLEDGER_TYPES = { asset: 'A', liability: 'L', equity: 'E', income: 'R', expense: 'X' } as const;

/** The header's account of what the file holds. */
export function periodComment(books: ExportBooks): string {
  const from = books.from ? books.from.toISOString() : 'the first entry';
  const to = books.to ? `${books.to.toISOString()} (excluded)` : 'the last entry';
  return `; store: ${books.storeId ?? 'every store'}; entries from ${from} to ${to}, by when they happened (UTC dates)`;
}

/** A description part: one line, no `;` (a comment) or `|` (hledger's payee separator). */
export function description(text: string): string {
  return oneLine(text).replace(/;/g, ',').replace(/\|/g, '/');
}

/** A tag value ends at a comma in hledger: commas become semicolons. */
export function tagValue(text: string): string {
  return oneLine(text).replace(/,/g, ';');
}
