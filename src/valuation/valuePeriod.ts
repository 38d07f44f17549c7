import type { Db } from '../db/database.ts';
import { type LedgerValuation, type StoreValuation, type ValuedAccount, valueLedger } from './valueLedger.ts';

/** One account's movements in a period [from, to): tokens and their values. */
export interface PeriodFlow {
  code: string;
  storeId: string;
  symbol: string;
  decimals: number;
  /** Sum of the period's postings, base units, debit-positive. */
  amount: bigint;
  /** Sum of the period's valued postings, minor units, debit-positive. */
  value: bigint;
  /** The period's postings no rate valued: the value is incomplete while this is not zero. */
  unvalued: number;
}

export interface PeriodValuation {
  currency: string;
  minorUnit: number;
  /** The day whose rates revalue the holdings: the period's last day (UTC). */
  closingDate: string;
  /** Accounts with postings in the period, ordered by code. */
  flows: PeriodFlow[];
  /** Per store: the sum of the fx:rounding lines of the period's valued entries, minor units. */
  rounding: Map<string, bigint>;
  /** Every account as of `to`, holdings revalued at the closing rate (valueLedger at `to`). */
  closing: ValuedAccount[];
  /** (store, date, symbol) without a rate, among the postings before `to`. */
  missing: LedgerValuation['missing'];
}

/**
 * The valuation of a period [from, to): the flows (postings in the period) and the holdings
 * revalued at `to`. A posting's value depends on its own amount and its day's rate only (rounded
 * once per posting), so the flows are exactly the valuation at `to` minus the valuation at
 * `from`, account by account: the same values `valueLedger` (and the exports) give each posting.
 * Records no finding: the caller records `missing` (recordMissingRates) in its own scope.
 */
export async function valuePeriod(
  db: Db,
  options: {
    currency: string;
    from: Date;
    to: Date;
    storeId?: string;
    stores?: readonly StoreValuation[];
  },
): Promise<PeriodValuation> {
  const { currency, storeId, stores } = options;
  const before = await valueLedger(db, { currency, at: options.from, storeId, stores });
  const end = await valueLedger(db, { currency, at: options.to, storeId, stores });
  return periodFlows(before, end);
}

/** The period between two valuations of the same ledger and currency, `before` at its start. */
export function periodFlows(before: LedgerValuation, end: LedgerValuation): PeriodValuation {
  const opening = new Map(before.accounts.map((a) => [a.code, a]));
  const flows: PeriodFlow[] = [];
  for (const a of end.accounts) {
    const o = opening.get(a.code);
    const flow = {
      code: a.code,
      storeId: a.storeId,
      symbol: a.symbol,
      decimals: a.decimals,
      amount: a.balance - (o?.balance ?? 0n),
      value: a.value - (o?.value ?? 0n),
      unvalued: a.unvalued - (o?.unvalued ?? 0),
    };
    // An account moved in the period when it has more postings (or another sum) than before.
    if (o === undefined || flow.amount !== 0n || flow.value !== 0n || flow.unvalued !== 0) flows.push(flow);
  }
  const rounding = new Map<string, bigint>();
  for (const [store, total] of end.rounding) {
    const period = total - (before.rounding.get(store) ?? 0n);
    if (period !== 0n) rounding.set(store, period);
  }
  return {
    currency: end.currency,
    minorUnit: end.minorUnit,
    closingDate: end.closingDate,
    flows,
    rounding,
    closing: end.accounts,
    missing: end.missing,
  };
}
