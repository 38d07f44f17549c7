import { formatFiat } from '../money/formatFiat.ts';
import { csvField } from '../recon/report/renderCsv.ts';
import { ROUNDING_ACCOUNT } from '../valuation/valueEntry.ts';
import {
  type ExportBooks,
  type ExportEntry,
  type ExportPosting,
  fixedDecimal,
  imbalance,
  type JournalWriter,
  type OpeningBalances,
  oneLine,
  refText,
  utcDate,
  valueExportEntry,
} from './exportModel.ts';
import { OPENING_ACCOUNT } from './naming.ts';

/**
 * CSV for spreadsheets and bookkeeping imports: one row per posting, a header row,
 * `date,entry_id,description,account,debit,credit,commodity,reference`. The account is the
 * ledger's own code (`assets:wallet:st_a:1:USDT`); debit and credit are positive decimals with
 * every decimal of the token, in their own columns; the commodity is the journal formats' one
 * (`USDT.1`); the reference is the entry's ref id (intent, claim link or chain transfer). The
 * opening balances come first, with no entry id and the reference `opening`. Quoting and the
 * spreadsheet-formula guard are the reconciliation report's (src/recon/report/renderCsv.ts).
 */
export const CSV_HEADER = [
  'date',
  'entry_id',
  'description',
  'account',
  'debit',
  'credit',
  'commodity',
  'reference',
];

/**
 * With `--value CUR`, four more columns: `value` (the posting's value in CUR, signed like the
 * ledger: debit positive; `unvalued` when no rate values it, never 0), `value_currency`, `rate`
 * and `rate_source` (`intent`, `import`, `par`). A valued entry whose values do not net to zero
 * gets one more row, account `fx:rounding`, with the value that closes it and no token amount.
 * Opening balances are not valued (their cost is the earlier periods' valuation): `opening`.
 */
export const CSV_VALUE_HEADER = ['value', 'value_currency', 'rate', 'rate_source'];

export function csvWriter(books: ExportBooks): JournalWriter {
  const valuation = books.valuation;
  if (valuation === null) return plainCsvWriter(books, null);
  const plain = plainCsvWriter(books, () => ['', valuation.currency, '', 'opening']);
  const row = (cells: string[]) => `${cells.map(csvField).join(',')}\n`;
  return {
    header: () => row([...CSV_HEADER, ...CSV_VALUE_HEADER]),
    opening: plain.opening,
    entry(e: ExportEntry) {
      const valued = valueExportEntry(e, valuation);
      const date = utcDate(e.occurredAt);
      const text = oneLine(`${e.kind} ${refText(e)}`);
      let out = plain.postings(date, e.id.toString(), text, e.postings, e.refId, (i) => {
        const p = valued.postings[i];
        return [
          p === undefined || p.value === null ? 'unvalued' : formatFiat(p.value, valuation.minorUnit),
          valuation.currency,
          p?.rate?.rate.text ?? '',
          p?.rate?.source ?? '',
        ];
      });
      if (valued.rounding !== null && valued.rounding !== 0n)
        out += row([
          date,
          e.id.toString(),
          text,
          ROUNDING_ACCOUNT,
          '',
          '',
          '',
          e.refId,
          formatFiat(valued.rounding, valuation.minorUnit),
          valuation.currency,
          '',
          'rounding',
        ]);
      return out;
    },
    warnings: () => [],
  };
}

/**
 * The rows of the plain columns; `extra` gives the cells appended to each row (the value columns,
 * by the posting's index), so a valued row is built once rather than a plain row split again.
 */
function plainCsvWriter(books: ExportBooks, openingExtra: (() => string[]) | null) {
  const commodities = new Map(books.assets.map((a) => [a.asset, a]));
  const row = (cells: string[]) => `${cells.map(csvField).join(',')}\n`;
  const line = (
    date: string,
    entryId: string,
    text: string,
    account: string,
    units: bigint,
    asset: string,
    decimals: number,
    reference: string,
    extra: string[],
  ) => {
    const amount = fixedDecimal(units < 0n ? -units : units, decimals);
    return row([
      date,
      entryId,
      text,
      account,
      units > 0n ? amount : '',
      units < 0n ? amount : '',
      commodities.get(asset)?.commodity ?? asset,
      reference,
      ...extra,
    ]);
  };
  const postings = (
    date: string,
    entryId: string,
    text: string,
    lines: readonly ExportPosting[],
    ref: string,
    extra: (i: number) => string[] = () => [],
  ) => {
    let out = '';
    lines.forEach((p, i) => {
      out += line(
        date,
        entryId,
        text,
        p.account.code,
        p.amount,
        p.account.asset,
        p.account.decimals,
        ref,
        extra(i),
      );
    });
    return out;
  };
  const openingCells = openingExtra ?? (() => []);
  return {
    postings,
    header: () => row(CSV_HEADER),
    opening(opening: OpeningBalances) {
      const date = utcDate(opening.at);
      const text = `opening balances before ${opening.at.toISOString()}`;
      let out = postings(date, '', text, opening.lines, 'opening', openingCells);
      for (const [asset, sum] of imbalance(opening.lines))
        out += line(
          date,
          '',
          text,
          OPENING_ACCOUNT,
          -sum,
          asset,
          commodities.get(asset)?.decimals ?? 0,
          'opening',
          openingCells(),
        );
      return out;
    },
    entry: (e: ExportEntry) =>
      postings(
        utcDate(e.occurredAt),
        e.id.toString(),
        oneLine(`${e.kind} ${refText(e)}`),
        e.postings,
        e.refId,
      ),
    warnings: () => [],
  } satisfies JournalWriter & { postings: typeof postings };
}
