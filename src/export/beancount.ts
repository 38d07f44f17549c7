import { formatDecimalAmount } from '../money/decimalAmount.ts';
import { formatFiat } from '../money/formatFiat.ts';
import { ROUNDING_ACCOUNT } from '../valuation/valueEntry.ts';
import {
  closingSection,
  type ExportAccount,
  type ExportBooks,
  type ExportEntry,
  type ExportPosting,
  type ExportValuation,
  entryTags,
  imbalance,
  type JournalWriter,
  type OpeningBalances,
  oneLine,
  refText,
  unvaluedReason,
  utcDate,
  valueExportEntry,
} from './exportModel.ts';
import { periodComment } from './hledger.ts';
import { BEANCOUNT_ROUNDING_ACCOUNT, beancountAccountNames, OPENING_ACCOUNT } from './naming.ts';

/**
 * Beancount (v2) file: every commodity an operating currency with a `commodity` directive, every
 * account opened on the file's first date for its one commodity, each entry a `*` transaction with
 * payee `<ref>`, narration `<kind>`, the kind as a tag and the identifiers as metadata.
 *
 * Amounts are written in canonical form (no trailing zeros): beancount computes with Python's
 * decimal context of 28 significant digits, and a shorter coefficient keeps sums exact for longer.
 * A balance or an account's movements that could need more digits than that are reported as a
 * warning (stderr): bean-query might round them, which hledger and ledger never do.
 */
const BEANCOUNT_DIGITS = 28;

export function beancountWriter(books: ExportBooks): JournalWriter {
  const names = beancountAccountNames(books.accounts);
  const commodities = new Map(books.assets.map((a) => [a.asset, a]));
  const width = Math.max(OPENING_ACCOUNT.length, ...[...names.values()].map((n) => n.length));
  const nameOf = (a: ExportAccount) => names.get(a) ?? a.code;
  const line = (name: string, text: string) => `  ${name.padEnd(width)}  ${text}\n`;
  const tokens = (units: bigint, asset: string, decimals: number) =>
    `${formatDecimalAmount(units, decimals)} ${commodities.get(asset)?.commodity ?? asset}`;
  const posting = (name: string, units: bigint, asset: string, decimals: number) =>
    line(name, tokens(units, asset, decimals));
  // Per account: the sum of |amount| and the most fraction digits any amount used, which bound
  // the coefficient of every partial sum Python's decimal computes for it.
  const load = new Map<ExportAccount, { abs: bigint; fraction: number }>();
  const track = (p: ExportPosting) => {
    const l = load.get(p.account) ?? { abs: 0n, fraction: 0 };
    l.abs += p.amount < 0n ? -p.amount : p.amount;
    const text = formatDecimalAmount(p.amount, p.account.decimals);
    l.fraction = Math.max(l.fraction, text.includes('.') ? text.length - text.indexOf('.') - 1 : 0);
    load.set(p.account, l);
  };
  const lines = (postings: readonly ExportPosting[]) =>
    postings
      .map((p) => {
        track(p);
        return posting(nameOf(p.account), p.amount, p.account.asset, p.account.decimals);
      })
      .join('');
  /**
   * `--value`: each posting at its total price in the functional currency (`@@`, unsigned), so its
   * weight is its value and `bean-query "select account, sum(weight) group by account"` answers
   * the fiat balances; the rounding line closes the entry in that currency. A price, not a cost
   * (`{{ }}`): docs/decisions.md says why. An entry with an unvalued posting has no price at all (a
   * partial one would not balance) and an `unvalued` metadata line: its weight stays in tokens.
   */
  const valuedLines = (e: ExportEntry, v: ExportValuation) => {
    const valued = valueExportEntry(e, v);
    if (valued.rounding === null)
      return `  unvalued: "${str(unvaluedReason(e, valued, v.currency))}"\n${lines(e.postings)}`;
    const fiat = (minor: bigint) => `${formatFiat(minor, v.minorUnit)} ${v.currency}`;
    let out = '';
    e.postings.forEach((p, i) => {
      track(p);
      const value = valued.postings[i]?.value ?? 0n;
      const units = tokens(p.amount, p.account.asset, p.account.decimals);
      out += line(nameOf(p.account), `${units} @@ ${fiat(value < 0n ? -value : value)}`);
    });
    if (valued.rounding !== 0n) out += line(BEANCOUNT_ROUNDING_ACCOUNT, fiat(valued.rounding));
    return out;
  };
  return {
    header() {
      let out = `; stablebooks journal export for beancount\n${periodComment(books)}\n`;
      out += `option "title" "${str(`stablebooks ${books.storeId ?? 'every store'}`)}"\n`;
      const v = books.valuation;
      if (v) out += `option "operating_currency" "${v.currency}"\n`;
      for (const a of books.assets) out += `option "operating_currency" "${a.commodity}"\n`;
      out += '\n';
      if (v) out += `${books.startDate} commodity ${v.currency}\n  name: "the functional currency"\n`;
      for (const a of books.assets) {
        out += `${books.startDate} commodity ${a.commodity}\n`;
        out += `  name: "${str(`${a.symbol} on chain ${a.chainId}`)}"\n`;
        out += `  chain_id: ${a.chainId}\n  contract: "${str(a.token)}"\n  decimals: ${a.decimals}\n`;
      }
      out += '\n';
      for (const a of books.accounts) {
        out += `${books.startDate} open ${nameOf(a)} ${commodities.get(a.asset)?.commodity ?? a.asset}\n`;
        out += `  code: "${str(a.code)}"\n`;
      }
      if (v)
        out += `${books.startDate} open ${BEANCOUNT_ROUNDING_ACCOUNT} ${v.currency}\n  code: "${ROUNDING_ACCOUNT}"\n`;
      return `${out}${books.startDate} open ${OPENING_ACCOUNT}\n\n`;
    },
    opening(opening: OpeningBalances) {
      if (opening.lines.length === 0) return '';
      let out = `${utcDate(opening.at)} * "stablebooks" "Opening balances before ${opening.at.toISOString()}"\n`;
      out += lines(opening.lines);
      for (const [asset, sum] of imbalance(opening.lines))
        out += posting(OPENING_ACCOUNT, -sum, asset, commodities.get(asset)?.decimals ?? 0);
      return `${out}\n`;
    },
    entry(e: ExportEntry) {
      let out = `${utcDate(e.occurredAt)} * "${str(refText(e))}" "${str(e.kind)}" #${e.kind.replace(/[^A-Za-z0-9_./-]/g, '-')}\n`;
      for (const [key, value] of entryTags(e)) out += `  ${key}: "${str(value)}"\n`;
      return `${out}${books.valuation ? valuedLines(e, books.valuation) : lines(e.postings)}\n`;
    },
    closing: () =>
      closingSection(
        books,
        (date, asset, rate, currency) => `${date} price ${asset.commodity} ${rate} ${currency}`,
      ),
    warnings() {
      const risky = [...load]
        .filter(([a, l]) => {
          const coefficient = l.abs / 10n ** BigInt(Math.max(0, a.decimals - l.fraction));
          return coefficient.toString().length > BEANCOUNT_DIGITS;
        })
        .map(([a]) => a.code);
      if (risky.length === 0) return [];
      return [
        `beancount computes with ${BEANCOUNT_DIGITS} significant digits; sums of ${risky.length} account(s) may need more and could be rounded by beancount (the file's amounts are exact): ${risky.slice(0, 5).join(', ')}${risky.length > 5 ? ', ...' : ''}`,
      ];
    },
  };
}

/** A beancount string literal's content: one line, backslash and quote escaped. */
function str(text: string): string {
  return oneLine(text).replace(/\\/g, '\\\\').replace(/"/g, '\\"');
}
