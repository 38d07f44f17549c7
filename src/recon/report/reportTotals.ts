/**
 * Totals the summary formats (Markdown, HTML) show but the report model does not carry, summed
 * exactly from the model's decimal strings.
 *
 * Glossary: a token is a (chain id, symbol) pair, the unit every amount is counted in; "scale" is
 * the number of fraction digits of a decimal string ("12.500000" has scale 6).
 */
import { formatDecimalAmount, parseDecimalAmount } from '../../money/decimalAmount.ts';
import type { ReconReport } from './reportModel.ts';

function scaleOf(text: string): number {
  const dot = text.indexOf('.');
  return dot < 0 ? 0 : text.length - dot - 1;
}

/** parseDecimalAmount takes no sign; differences and credit balances in the model can be negative. */
function toUnits(text: string, scale: number): bigint {
  return text.startsWith('-') ? -parseDecimalAmount(text.slice(1), scale) : parseDecimalAmount(text, scale);
}

/**
 * The exact sum, written with the largest scale among the inputs ("1.500000" + "2" = "3.500000"),
 * so a total reads like the amounts it adds up. An empty list sums to "0".
 */
export function sumDecimals(values: readonly string[]): string {
  const scale = Math.max(0, ...values.map(scaleOf));
  const total = values.reduce((sum, value) => sum + toUnits(value, scale), 0n);
  const text = formatDecimalAmount(total, scale);
  // formatDecimalAmount drops trailing zeros; pad back to the inputs' scale.
  if (scale === 0) return text;
  const [whole, fraction = ''] = text.split('.');
  return `${whole}.${fraction.padEnd(scale, '0')}`;
}

export interface TokenKey {
  chainId: number;
  symbol: string;
}

export function tokenLabel(token: TokenKey): string {
  return `${token.symbol} (${token.chainId})`;
}

function byToken(a: TokenKey, b: TokenKey): number {
  return a.chainId - b.chainId || (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0);
}

export interface ConfirmedTotal extends TokenKey {
  count: number;
  requested: string;
  paid: string;
  fees: string;
  net: string;
}

/** CONFIRMED intents per token, over every store in the report, ordered by chain then symbol. */
export function confirmedTotalsByToken(report: ReconReport): ConfirmedTotal[] {
  const groups = new Map<string, ReconReport['payments']['byStatus']>();
  for (const row of report.payments.byStatus) {
    if (row.status !== 'CONFIRMED') continue;
    const key = `${row.chainId}:${row.symbol}`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  return [...groups.values()]
    .map((rows) => ({
      chainId: rows[0]!.chainId,
      symbol: rows[0]!.symbol,
      count: rows.reduce((n, r) => n + r.count, 0),
      requested: sumDecimals(rows.map((r) => r.requested)),
      paid: sumDecimals(rows.map((r) => r.paid)),
      fees: sumDecimals(rows.map((r) => r.fees)),
      net: sumDecimals(rows.map((r) => r.net)),
    }))
    .sort(byToken);
}

export interface PayoutOutcomeTotal extends TokenKey {
  outcome: ReconReport['payouts'][number]['outcome'];
  count: number;
  amount: string;
  fees: string;
}

/** Payouts per token and outcome over every store, ordered by chain, symbol, then first appearance. */
export function payoutTotalsByOutcome(report: ReconReport): PayoutOutcomeTotal[] {
  const groups = new Map<string, ReconReport['payouts']>();
  for (const row of report.payouts) {
    const key = `${row.chainId}:${row.symbol}:${row.outcome}`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  return [...groups.values()]
    .map((rows) => ({
      chainId: rows[0]!.chainId,
      symbol: rows[0]!.symbol,
      outcome: rows[0]!.outcome,
      count: rows.reduce((n, r) => n + r.count, 0),
      amount: sumDecimals(rows.map((r) => r.amount)),
      fees: sumDecimals(rows.map((r) => r.fees)),
    }))
    .sort(byToken);
}

/** The fiat figures of one store, in the order the formats list them, with their labels. */
export const FIAT_FIGURE_LABELS = [
  ['revenue', 'revenue'],
  ['serviceFees', 'service fees'],
  ['payouts', 'payouts'],
  ['payoutFees', 'payout fees'],
  ['fxRounding', 'FX rounding'],
  ['fxUnrealised', 'unrealised FX'],
] as const;

export interface FiatFigureRow {
  storeId: string;
  currency: string;
  /** The figure's field in the model (`revenue`), and its label (`service fees`). */
  figure: (typeof FIAT_FIGURE_LABELS)[number][0] | 'fxResult';
  label: string;
  accounts: string[];
  /** The same accounts' token figure, "USDT (1): -25, USDC (8453): 3"; "" for none. */
  tokens: string;
  /** A decimal in the currency, or null: unvalued (never shown as 0). */
  value: string | null;
  unvalued: number;
}

/** Every store's fiat figures as rows (the FX result last), for the tables of each format. */
export function fiatFigureRows(report: ReconReport): FiatFigureRow[] {
  return report.valuation.flatMap((v) => [
    ...FIAT_FIGURE_LABELS.map(([figure, label]): FiatFigureRow => {
      const f = v[figure];
      return {
        storeId: v.storeId,
        currency: v.currency,
        figure,
        label,
        accounts: f.accounts,
        tokens: f.tokens.map((t) => `${tokenLabel(t)}: ${t.amount}`).join(', '),
        value: f.value,
        unvalued: f.unvalued,
      };
    }),
    {
      storeId: v.storeId,
      currency: v.currency,
      figure: 'fxResult',
      label: 'FX result (gain +)',
      accounts: [],
      tokens: '',
      value: v.fxResult,
      unvalued: v.fxResult === null ? v.fxUnrealised.unvalued + v.fxRounding.unvalued : 0,
    },
  ]);
}

/** How a person reads a fiat figure: "23.08 EUR", or why there is none. */
export function fiatText(row: Pick<FiatFigureRow, 'value' | 'unvalued' | 'currency'>): string {
  if (row.value !== null) return `${row.value} ${row.currency}`;
  return `unvalued (${row.unvalued} without a rate)`;
}
