import type { Db } from '../../db/database.ts';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import { formatFiat } from '../../money/formatFiat.ts';
import { recordMissingRates } from '../../valuation/recordMissingRates.ts';
import { HOLDING_ACCOUNT_KINDS, isHoldingAccount } from '../../valuation/revalueHolding.ts';
import { ROUNDING_ACCOUNT } from '../../valuation/valueEntry.ts';
import { type PeriodValuation, valuePeriod } from '../../valuation/valuePeriod.ts';
import type { Period } from '../period.ts';
import type { FiatFigure, StoreValuationSection } from './reportModel.ts';

/**
 * The account kinds each fiat figure of the report sums (docs/accounting.md, "Chart of accounts"):
 * the ledger's own accounts, so an accountant gets the same figure from the valued export.
 */
export const VALUED_FIGURES = {
  revenue: ['income:sales'],
  serviceFees: ['expense:service_fees'],
  payouts: ['expense:payouts'],
  payoutFees: ['expense:payout_fees'],
} as const;

/** What the report needs of a store's configuration to value its books. */
export interface ValuedStore {
  storeId: string;
  functionalCurrency: string;
  par: ReadonlyMap<string, string>;
}

/**
 * Values the period of each store in scope in its functional currency, and records each missing
 * rate as a `valuation_rate_missing` finding (the report lists them with the other findings).
 */
export async function reportValuation(
  db: Db,
  stores: readonly ValuedStore[],
  period: Period,
  storeId: string | null,
): Promise<StoreValuationSection[]> {
  const sections: StoreValuationSection[] = [];
  for (const store of stores) {
    if (storeId !== null && store.storeId !== storeId) continue;
    const valuation = await valuePeriod(db, {
      currency: store.functionalCurrency,
      from: period.from,
      to: period.to,
      storeId: store.storeId,
      stores: [{ storeId: store.storeId, par: store.par }],
    });
    await recordMissingRates(db, valuation.currency, valuation.missing, {
      storeId: store.storeId,
      before: period.to,
    });
    sections.push(storeValuationSection(store.storeId, valuation));
  }
  return sections;
}

const kindOf = (code: string) => code.split(':').slice(0, 2).join(':');
const chainOf = (code: string) => Number(code.split(':')[3] ?? 0);

/** Token amounts per chain and symbol, in the order of the accounts' codes. */
function tokenTotals(
  rows: readonly { code: string; symbol: string; decimals: number; amount: bigint }[],
): FiatFigure['tokens'] {
  const sums = new Map<string, { chainId: number; symbol: string; decimals: number; amount: bigint }>();
  for (const r of rows) {
    const key = `${chainOf(r.code)}:${r.symbol}`;
    const sum = sums.get(key) ?? {
      chainId: chainOf(r.code),
      symbol: r.symbol,
      decimals: r.decimals,
      amount: 0n,
    };
    sum.amount += r.amount;
    sums.set(key, sum);
  }
  return [...sums.values()]
    .sort((a, b) => a.chainId - b.chainId || (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0))
    .map((t) => ({
      chainId: t.chainId,
      symbol: t.symbol,
      amount: formatDecimalAmount(t.amount, t.decimals),
    }));
}

/** One store's figures from its period valuation (pure). */
export function storeValuationSection(storeId: string, v: PeriodValuation): StoreValuationSection {
  const fiat = (minor: bigint, unvalued: number) => (unvalued > 0 ? null : formatFiat(minor, v.minorUnit));
  const flows = v.flows.filter((f) => f.storeId === storeId);
  const figure = (kinds: readonly string[]): FiatFigure => {
    const rows = flows.filter((f) => kinds.includes(kindOf(f.code)));
    const unvalued = rows.reduce((n, r) => n + r.unvalued, 0);
    return {
      accounts: [...kinds],
      tokens: tokenTotals(rows),
      value: fiat(
        rows.reduce((sum, r) => sum + r.value, 0n),
        unvalued,
      ),
      unvalued,
    };
  };

  // An entry with an unvalued posting has no rounding line: the period's rounding is incomplete.
  const periodUnvalued = flows.reduce((n, f) => n + f.unvalued, 0);
  const rounding = v.rounding.get(storeId) ?? 0n;
  const fxRounding: FiatFigure = {
    accounts: [ROUNDING_ACCOUNT],
    tokens: [],
    value: fiat(rounding, periodUnvalued),
    unvalued: periodUnvalued,
  };

  const holdings = v.closing.filter((a) => a.storeId === storeId && isHoldingAccount(a.code));
  const notRevalued = holdings.filter((a) => a.unrealised === null).length;
  const unrealised = holdings.reduce((sum, a) => sum + (a.unrealised ?? 0n), 0n);
  const fxUnrealised: FiatFigure = {
    accounts: [...HOLDING_ACCOUNT_KINDS],
    tokens: tokenTotals(holdings.map((a) => ({ ...a, amount: a.balance }))),
    value: fiat(unrealised, notRevalued),
    unvalued: notRevalued,
  };

  return {
    storeId,
    currency: v.currency,
    closingDate: v.closingDate,
    revenue: figure(VALUED_FIGURES.revenue),
    serviceFees: figure(VALUED_FIGURES.serviceFees),
    payouts: figure(VALUED_FIGURES.payouts),
    payoutFees: figure(VALUED_FIGURES.payoutFees),
    fxRounding,
    fxUnrealised,
    fxResult:
      fxUnrealised.value === null || fxRounding.value === null
        ? null
        : formatFiat(unrealised - rounding, v.minorUnit),
    missingRates: v.missing
      .filter((m) => m.storeId === storeId)
      .map((m) => ({ date: m.date, symbol: m.symbol }))
      .sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : a.symbol < b.symbol ? -1 : 1)),
  };
}
