import { formatDecimalAmount } from '../money/decimalAmount.ts';
import {
  type ExportAccount,
  type ExportBooks,
  type ExportEntry,
  type ExportPosting,
  entryTags,
  imbalance,
  type JournalWriter,
  type OpeningBalances,
  oneLine,
  refText,
  utcDate,
} from './exportModel.ts';
import { periodComment } from './hledger.ts';
import { beancountAccountNames, OPENING_ACCOUNT } from './naming.ts';

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
  const posting = (name: string, units: bigint, asset: string, decimals: number) =>
    `  ${name.padEnd(width)}  ${formatDecimalAmount(units, decimals)} ${commodities.get(asset)?.commodity ?? asset}\n`;
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
  return {
    header() {
      let out = `; stablebooks journal export for beancount\n${periodComment(books)}\n`;
      out += `option "title" "${str(`stablebooks ${books.storeId ?? 'every store'}`)}"\n`;
      for (const a of books.assets) out += `option "operating_currency" "${a.commodity}"\n`;
      out += '\n';
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
      return `${out}${lines(e.postings)}\n`;
    },
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
