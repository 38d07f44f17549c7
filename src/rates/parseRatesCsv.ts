import { parseExactRate } from '../money/exactRate.ts';

/** One imported rate: `rate` units of `currency` per one `asset` coin on `date` (UTC). */
export interface ImportedRate {
  date: string;
  asset: 'USDT' | 'USDC';
  currency: string;
  /** Canonical decimal string (parseExactRate), so "0.920" and "0.92" are one rate. */
  rate: string;
  /** 1-based line of the file, for messages. */
  line: number;
}

export type ParsedRates = { ok: true; rates: ImportedRate[] } | { ok: false; line: number; message: string };

export const RATES_CSV_HEADER = 'date,asset,currency,rate';
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

export function isCalendarDate(text: string): boolean {
  const m = DATE_RE.exec(text);
  if (!m) return false;
  const d = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === text;
}

/**
 * Reads a rates file (docs/accounting.md, "Valuation"): the header, then one rate per line. The
 * first bad line refuses the whole file, so an import is all or nothing; blank lines are skipped.
 * The same (date, asset, currency) twice with different rates is a bad line too: which to keep
 * would be a guess.
 */
export function parseRatesCsv(text: string): ParsedRates {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const header = (lines[0] ?? '').trim();
  if (header !== RATES_CSV_HEADER)
    return {
      ok: false,
      line: 1,
      message: `the header must be ${RATES_CSV_HEADER}, not ${JSON.stringify(header.slice(0, 80))}`,
    };
  const rates: ImportedRate[] = [];
  const seen = new Map<string, string>();
  for (let i = 1; i < lines.length; i++) {
    const raw = (lines[i] ?? '').trim();
    if (raw === '') continue;
    const line = i + 1;
    const fields = raw.split(',').map((f) => f.trim());
    if (fields.length !== 4)
      return { ok: false, line, message: `expected 4 fields (${RATES_CSV_HEADER}), found ${fields.length}` };
    const [date = '', asset = '', currency = '', rateText = ''] = fields;
    if (!isCalendarDate(date))
      return { ok: false, line, message: `date ${JSON.stringify(date)} is not a YYYY-MM-DD day` };
    if (asset !== 'USDT' && asset !== 'USDC')
      return { ok: false, line, message: `asset ${JSON.stringify(asset)} is not USDT or USDC` };
    if (!/^[A-Z]{3}$/.test(currency))
      return {
        ok: false,
        line,
        message: `currency ${JSON.stringify(currency)} is not an ISO 4217 code in capitals`,
      };
    const rate = parseExactRate(rateText);
    if (rate === undefined)
      return {
        ok: false,
        line,
        message: `rate ${JSON.stringify(rateText.slice(0, 40))} is not a plain decimal above zero (no sign, exponent or spaces)`,
      };
    const key = `${date},${asset},${currency}`;
    const before = seen.get(key);
    if (before !== undefined && before !== rate.text)
      return {
        ok: false,
        line,
        message: `${key} is listed again with another rate (${before}, then ${rate.text})`,
      };
    seen.set(key, rate.text);
    if (before === undefined) rates.push({ date, asset, currency, rate: rate.text, line });
  }
  return { ok: true, rates };
}
