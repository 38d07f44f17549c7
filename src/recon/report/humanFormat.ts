/**
 * How the human-facing report (HTML) writes amounts, dates and hashes. Amounts are formatted from
 * their exact decimal strings, digit by digit, never through a JS number: a thousands separator
 * every three digits and at least two fraction digits ("1250" → "1,250.00"), every further digit
 * kept ("21.0125", "422.000001"). Dates are UTC, written as a person writes them ("3 Nov",
 * "1–7 November 2026"), never as ISO timestamps.
 */

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAY_MS = 86_400_000;

const DECIMAL_RE = /^(-?)(\d+)(?:\.(\d+))?$/;

/**
 * An exact decimal string with thousands separators and at least `minFraction` fraction digits.
 * A string that is not a plain decimal is returned as it is (the page shows what it was given).
 */
export function formatAmount(text: string, minFraction = 2): string {
  const match = DECIMAL_RE.exec(text.trim());
  if (!match) return text;
  const [, sign = '', rawWhole = '0', rawFraction = ''] = match;
  const whole = rawWhole.replace(/^0+(?=\d)/, '');
  const fraction = rawFraction.replace(/0+$/, '').padEnd(minFraction, '0');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const zero = /^0*$/.test(whole) && /^0*$/.test(fraction);
  return `${zero ? '' : sign}${grouped}${fraction === '' ? '' : `.${fraction}`}`;
}

/** The amount without its sign, formatted: what a Debit or Credit column shows. */
export function formatMagnitude(text: string): string {
  return formatAmount(text.trim().replace(/^-/, ''));
}

/** Whether an exact decimal string is below zero ("-0.00" is not). */
export function isNegative(text: string): boolean {
  const t = text.trim();
  return t.startsWith('-') && /[1-9]/.test(t);
}

/** Whether an exact decimal string is zero. */
export function isZero(text: string): boolean {
  return !/[1-9]/.test(text);
}

/** A count with thousands separators (counts are integers, exact as numbers). */
export function formatCount(n: number): string {
  return formatAmount(String(n), 0);
}

function parts(d: Date) {
  return {
    day: d.getUTCDate(),
    month: MONTHS[d.getUTCMonth()] ?? '',
    year: d.getUTCFullYear(),
    hh: String(d.getUTCHours()).padStart(2, '0'),
    mm: String(d.getUTCMinutes()).padStart(2, '0'),
  };
}

function isMidnight(d: Date): boolean {
  return d.getTime() % DAY_MS === 0;
}

/** "YYYY-MM-DD" (a UTC day) → "3 Nov". */
export function shortDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(d.getTime())) return day;
  const p = parts(d);
  return `${p.day} ${p.month.slice(0, 3)}`;
}

/** "YYYY-MM-DD" (a UTC day) → "3 November 2026". */
export function longDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  return Number.isNaN(d.getTime()) ? day : formatDate(d);
}

/** "3 November 2026" (UTC). */
export function formatDate(d: Date): string {
  const p = parts(d);
  return `${p.day} ${p.month} ${p.year}`;
}

/**
 * An instant as a person reads it, in UTC: "8 Nov 2026, 00:30 UTC". Not an instant (null, or a
 * string that is not a time) is returned as given, or null.
 */
export function formatDateTime(value: string | null): string | null {
  if (value === null) return null;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return value;
  const p = parts(d);
  return `${p.day} ${p.month.slice(0, 3)} ${p.year}, ${p.hh}:${p.mm} UTC`;
}

/**
 * A half-open period [from, to) as the days it covers: "1–30 November 2026 (UTC)", "28 October –
 * 3 November 2026 (UTC)", "7 November 2026 (UTC)". Bounds that are not midnight are written with
 * their times ("1 November 2026 06:00 – 2 November 2026 06:00 (UTC)").
 */
export function formatPeriod(fromText: string, toText: string): string {
  const from = new Date(fromText);
  const to = new Date(toText);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) return `${fromText} – ${toText}`;
  if (!isMidnight(from) || !isMidnight(to) || to.getTime() <= from.getTime()) {
    const at = (d: Date) => `${formatDate(d)} ${parts(d).hh}:${parts(d).mm}`;
    return `${at(from)} – ${at(to)} (UTC)`;
  }
  const a = parts(from);
  const b = parts(new Date(to.getTime() - DAY_MS));
  if (a.year !== b.year) return `${a.day} ${a.month} ${a.year} – ${b.day} ${b.month} ${b.year} (UTC)`;
  if (a.month !== b.month) return `${a.day} ${a.month} – ${b.day} ${b.month} ${b.year} (UTC)`;
  if (a.day !== b.day) return `${a.day}–${b.day} ${a.month} ${a.year} (UTC)`;
  return `${a.day} ${a.month} ${a.year} (UTC)`;
}

/** "0xab5801a7…a5cd" → "0xab58…a5cd": enough to recognise, the whole value in a link or title. */
export function shortHex(value: string): string {
  return /^0x[0-9a-fA-F]{12,}$/.test(value) ? `${value.slice(0, 6)}…${value.slice(-4)}` : value;
}

/** "unmatched_transfer_in" → "unmatched transfer in". */
export function humanize(key: string): string {
  return key.replace(/[_.]+/g, ' ').trim();
}
