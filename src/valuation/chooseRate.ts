import { type ExactRate, parseExactRate } from '../money/exactRate.ts';

export type RateSource = 'intent' | 'import' | 'par';

export interface ChosenRate {
  rate: ExactRate;
  source: RateSource;
  /** An imported rate a person superseded (`rates supersede`): what it replaced, who and why. */
  supersession?: RateSupersession;
}

/** The latest supersession of one day's imported rate, as the valuation reports it. */
export interface RateSupersession {
  date: string;
  asset: string;
  currency: string;
  /** The rate in force now (canonical decimal text). */
  rate: string;
  /** The imported rate, kept as history. */
  imported: string;
  note: string;
  by: string;
  at: string;
}

/**
 * The rate that values one posting, in the order docs/accounting.md ("Valuation") states: the
 * service's own currency_rate of the entry's fiat-priced intent (only for that payment, and only
 * when the intent was priced in the functional currency), then the merchant's imported rate for
 * the entry's date, then the configured par. Undefined when none applies: the posting is unvalued.
 */
export function chooseRate(candidates: {
  intent?: string | null;
  imported?: string | null;
  par?: string | null;
}): ChosenRate | undefined {
  for (const source of ['intent', 'import', 'par'] as const) {
    const text = candidates[source === 'import' ? 'imported' : source];
    if (text === undefined || text === null) continue;
    const rate = parseExactRate(text);
    if (rate !== undefined) return { rate, source };
  }
  return undefined;
}
