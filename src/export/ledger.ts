import { ROUNDING_ACCOUNT } from '../valuation/valueEntry.ts';
import {
  closingSection,
  type ExportAccount,
  type ExportBooks,
  type ExportEntry,
  type ExportPosting,
  entryTags,
  fixedDecimal,
  imbalance,
  type JournalWriter,
  type OpeningBalances,
  refText,
  TAG_KEYS,
  utcDate,
} from './exportModel.ts';
import { description, fiatSample, marketPrice, periodComment, tagValue, totalCostLines } from './hledger.ts';
import { OPENING_ACCOUNT, plainAccountNames, TOP_LEVELS } from './naming.ts';

/**
 * Ledger (ledger-cli 3) journal: the accounts and amounts of the hledger file, with ledger's own
 * declarations (`commodity` with a `format` of the token's full precision, `account`, `tag`) so
 * `ledger --pedantic` accepts it, and `DATE * (entry id) <kind> <ref>` as the payee line. Ledger
 * computes with exact rationals, so any amount prints exactly. `--value` writes each posting's
 * total cost as the hledger file does (totalCostLines): `ledger bal -B` answers the fiat balances.
 */
export function ledgerWriter(books: ExportBooks): JournalWriter {
  const names = plainAccountNames(books.accounts);
  const commodities = new Map(books.assets.map((a) => [a.asset, a]));
  const width = Math.max(OPENING_ACCOUNT.length, ...[...names.values()].map((n) => n.length));
  const nameOf = (a: ExportAccount) => names.get(a) ?? a.code;
  const amount = (units: bigint, asset: string, decimals: number) =>
    `${fixedDecimal(units, decimals)} "${commodities.get(asset)?.commodity ?? asset}"`;
  const posting = (name: string, text: string) => `    ${name.padEnd(width)}  ${text}\n`;
  const tokens = (p: ExportPosting): [string, string] => [
    nameOf(p.account),
    amount(p.amount, p.account.asset, p.account.decimals),
  ];
  const lines = (postings: readonly ExportPosting[]) => postings.map((p) => posting(...tokens(p))).join('');
  return {
    header() {
      let out = `; stablebooks journal export for ledger\n${periodComment(books)}\n`;
      out +=
        '; One commodity per token and chain ("USDT.1" is USDT on chain 1); amounts carry every decimal of their token.\n\n';
      for (const a of books.assets) {
        out += `commodity "${a.commodity}"\n`;
        out += `    note ${a.symbol} on chain ${a.chainId}, contract ${a.token}, ${a.decimals} decimals\n`;
        out += `    format ${fixedDecimal(1000n * 10n ** BigInt(a.decimals), a.decimals)} "${a.commodity}"\n`;
      }
      const v = books.valuation;
      if (v)
        out += `commodity "${v.currency}"\n    note the functional currency\n    format ${fiatSample(v)} "${v.currency}"\n`;
      out += '\n';
      for (const [, top] of TOP_LEVELS) out += `account ${top}\n`;
      for (const a of books.accounts) out += `account ${nameOf(a)}\n    note ${a.code}\n`;
      out += `account ${OPENING_ACCOUNT}\n`;
      if (v)
        out += `account ${ROUNDING_ACCOUNT}\n    note the valuation's rounding line (docs/accounting.md, "Valuation")\n`;
      out += '\n';
      for (const key of TAG_KEYS) out += `tag ${key}\n`;
      if (v) out += 'tag unvalued\n';
      return `${out}\n`;
    },
    opening(opening: OpeningBalances) {
      if (opening.lines.length === 0) return '';
      let out = `${utcDate(opening.at)} * Opening balances\n    ; balances before ${opening.at.toISOString()}\n`;
      out += lines(opening.lines);
      for (const [asset, sum] of imbalance(opening.lines))
        out += posting(OPENING_ACCOUNT, amount(-sum, asset, commodities.get(asset)?.decimals ?? 0));
      return `${out}\n`;
    },
    entry(e: ExportEntry) {
      let out = `${utcDate(e.occurredAt)} * (${e.id}) ${description(`${e.kind} ${refText(e)}`)}\n`;
      for (const [key, value] of entryTags(e)) out += `    ; ${key}: ${tagValue(value)}\n`;
      const v = books.valuation;
      return `${out}${v ? totalCostLines(e, v, tokens, posting) : lines(e.postings)}\n`;
    },
    closing: () => closingSection(books, marketPrice),
    warnings: () => [],
  };
}
