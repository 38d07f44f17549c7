import { sql } from 'drizzle-orm';
import type { Db, DbExecutor } from '../db/database.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import { currencyMinorUnit } from '../money/currencyMinorUnits.ts';
import { Currency } from '../svc/models/currency.ts';
import { type ChosenRate, chooseRate } from './chooseRate.ts';
import { isHoldingAccount, revalueHolding } from './revalueHolding.ts';
import { valueEntry } from './valueEntry.ts';

/** A store's valuation settings, from STORES_FILE (functional_currency, par). */
export interface StoreValuation {
  storeId: string;
  par: ReadonlyMap<string, string>;
}

export interface ValuedAccount {
  code: string;
  storeId: string;
  symbol: string;
  decimals: number;
  /** Token balance, base units. */
  balance: bigint;
  /** Sum of the valued postings' values, minor units (the valued cost of a holding). */
  value: bigint;
  /** Postings no rate valued: the account's fiat figure is incomplete while this is not zero. */
  unvalued: number;
  /** Holdings only: closing balance at the closing rate; null without a closing rate. */
  closingValue: bigint | null;
  /** closingValue - value: unrealised FX gain (+) or loss (-); null when not revalued. */
  unrealised: bigint | null;
}

export interface LedgerValuation {
  currency: string;
  minorUnit: number;
  /** The day whose rates are the closing rates (UTC). */
  closingDate: string;
  accounts: ValuedAccount[];
  /** Per store: the sum of the entries' fx:rounding lines, minor units. */
  rounding: Map<string, bigint>;
  /** (store, date, symbol) with postings and no rate. */
  missing: { storeId: string; date: string; symbol: string }[];
}

type PostingRow = {
  entry_id: string;
  store_id: string;
  day: string;
  ref_type: string;
  ref_id: string;
  code: string;
  symbol: string;
  decimals: number;
  amount: string;
};

const intentCurrencyCode = new Map<number, string>(Object.entries(Currency).map(([code, n]) => [n, code]));

/**
 * Values the ledger in `currency` as of `at` (docs/accounting.md, "Valuation"): reads the postings,
 * the intents' own rates (rule 1's metadata) and the imported rates, values each entry
 * (valueEntry) and revalues the holdings at the closing day's rate. Nothing is written to the
 * ledger; with `recordFindings` each missing rate is a `valuation_rate_missing` finding, and those
 * of the same currency that a rate now covers are resolved.
 */
export async function valueLedger(
  db: Db,
  options: {
    currency: string;
    at?: Date;
    storeId?: string;
    stores?: readonly StoreValuation[];
    recordFindings?: boolean;
  },
): Promise<LedgerValuation> {
  const at = options.at ?? new Date();
  const currency = options.currency;
  const minorUnit = currencyMinorUnit(currency);
  const closingDate = new Date(at.getTime() - 1).toISOString().slice(0, 10);
  const postings = await db.execute<PostingRow>(sql`
    select e.id::text as entry_id, e.store_id, (e.occurred_at at time zone 'UTC')::date::text as day,
           e.ref_type, e.ref_id, a.code, a.symbol, a.decimals, p.amount::text as amount
      from ledger_postings p
      join ledger_entries e on e.id = p.entry_id
      join ledger_accounts a on a.id = p.account_id
     where p.occurred_at < ${at.toISOString()}::timestamptz
       ${options.storeId === undefined ? sql`` : sql`and e.store_id = ${options.storeId}`}
     order by e.id, p.id`);
  const rateOn = await loadRateBook(db, currency, options.stores ?? []);

  const accounts = new Map<string, ValuedAccount>();
  const rounding = new Map<string, bigint>();
  const missing = new Map<string, { storeId: string; date: string; symbol: string }>();
  const rows = postings.rows;
  for (let i = 0; i < rows.length; ) {
    const first = rows[i] as PostingRow;
    let j = i;
    while (j < rows.length && (rows[j] as PostingRow).entry_id === first.entry_id) j++;
    const entryRows = rows.slice(i, j);
    i = j;
    const intentRef = first.ref_type === 'checkout_intent' ? first.ref_id : undefined;
    const valued = valueEntry(
      entryRows.map((r) => ({
        accountCode: r.code,
        symbol: r.symbol,
        decimals: r.decimals,
        amount: BigInt(r.amount),
      })),
      (symbol) => rateOn(first.store_id, first.day, symbol, intentRef),
      minorUnit,
    );
    for (const symbol of valued.missing)
      missing.set(`${first.store_id}:${first.day}:${symbol}`, {
        storeId: first.store_id,
        date: first.day,
        symbol,
      });
    if (valued.rounding !== null && valued.rounding !== 0n)
      rounding.set(first.store_id, (rounding.get(first.store_id) ?? 0n) + valued.rounding);
    for (const p of valued.postings) {
      const held = accounts.get(p.accountCode) ?? {
        code: p.accountCode,
        storeId: first.store_id,
        symbol: p.symbol,
        decimals: p.decimals,
        balance: 0n,
        value: 0n,
        unvalued: 0,
        closingValue: null,
        unrealised: null,
      };
      held.balance += p.amount;
      if (p.value === null) held.unvalued++;
      else held.value += p.value;
      accounts.set(p.accountCode, held);
    }
  }
  for (const a of accounts.values()) {
    if (!isHoldingAccount(a.code) || a.unvalued > 0) continue;
    const revalued = revalueHolding(
      { balance: a.balance, decimals: a.decimals, valuedCost: a.value },
      rateOn(a.storeId, closingDate, a.symbol),
      minorUnit,
    );
    if (revalued) {
      a.closingValue = revalued.closingValue;
      a.unrealised = revalued.unrealised;
    }
  }

  if (options.recordFindings) await recordMissing(db, currency, [...missing.values()]);
  return {
    currency,
    minorUnit,
    closingDate,
    accounts: [...accounts.values()].sort((x, y) => (x.code < y.code ? -1 : x.code > y.code ? 1 : 0)),
    rounding,
    missing: [...missing.values()],
  };
}

/** One finding per (store, day, coin, currency) without a rate; those a rate now covers resolve. */
async function recordMissing(
  db: Db,
  currency: string,
  missing: readonly { storeId: string; date: string; symbol: string }[],
): Promise<void> {
  await db.transaction(async (tx) => {
    const still = new Set(missing.map((m) => `${m.storeId}:${m.date}:${m.symbol}:${currency}`));
    const open = await tx.execute<{ ref_id: string }>(sql`
      select ref_id from findings
       where kind = 'valuation_rate_missing' and resolved_at is null and ref_id like ${`%:${currency}`}`);
    for (const o of open.rows)
      if (!still.has(o.ref_id))
        await resolveFinding(tx, 'valuation_rate_missing', { type: 'rate', id: o.ref_id });
    for (const m of missing)
      await recordFinding(
        tx,
        {
          kind: 'valuation_rate_missing',
          severity: 'warning',
          ref: { type: 'rate', id: `${m.storeId}:${m.date}:${m.symbol}:${currency}` },
          details: { rate_date: m.date, asset: m.symbol, currency },
        },
        m.storeId,
      );
  });
}

/** The rate of a posting: its store, its entry's UTC day, its coin, and its entry's intent if any. */
export type RateBook = (
  storeId: string,
  day: string,
  symbol: string,
  intentRef?: string,
) => ChosenRate | undefined;

/**
 * Every rate that can value postings in `currency`: the intents' own rates (rule 1's metadata,
 * when the intent was priced in that currency), the imported rates, and each store's par. Read
 * once; the lookups are then in memory (a rate per day and coin is small beside the postings).
 */
export async function loadRateBook(
  db: DbExecutor,
  currency: string,
  stores: readonly StoreValuation[],
): Promise<RateBook> {
  const intentRates = await db.execute<{ ref_id: string; currency: string | null; rate: string | null }>(sql`
    select ref_id, metadata->>'currency' as currency, metadata->>'currency_rate' as rate
      from ledger_entries
     where kind = 'checkout.confirmed' and ref_type = 'checkout_intent' and metadata->>'currency_rate' is not null`);
  const imported = await db.execute<{ day: string; asset: string; rate: string }>(sql`
    select rate_date::text as day, asset, rate::text as rate
      from rates where currency = ${currency} and source = 'import'`);
  const intentRate = new Map<string, string>();
  for (const r of intentRates.rows) {
    if (r.rate !== null && r.currency !== null && intentCurrencyCode.get(Number(r.currency)) === currency)
      intentRate.set(r.ref_id, r.rate);
  }
  const importedRate = new Map(imported.rows.map((r) => [`${r.day}:${r.asset}`, r.rate]));
  const parOf = new Map(stores.map((s) => [s.storeId, s.par]));
  return (storeId, day, symbol, intentRef) =>
    chooseRate({
      intent: intentRef === undefined ? undefined : intentRate.get(intentRef),
      imported: importedRate.get(`${day}:${symbol}`),
      par: parOf.get(storeId)?.get(symbol),
    });
}
