import { type SQL, sql } from 'drizzle-orm';
import type { Db, DbExecutor } from '../db/database.ts';
import { currencyMinorUnit } from '../money/currencyMinorUnits.ts';
import { Currency } from '../svc/models/currency.ts';
import { type ChosenRate, chooseRate, type RateSupersession } from './chooseRate.ts';
import { recordMissingRates } from './recordMissingRates.ts';
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
  /** The superseded imported rates this valuation used (rates supersede), by day and coin. */
  superseded: RateSupersession[];
}

type PostingRow = {
  entry_id: string;
  store_id: string;
  day: string;
  ref_type: string;
  ref_id: string;
  /** Null on the row of an entry none of whose postings is before `at` (it only ends the page). */
  code: string | null;
  symbol: string;
  decimals: number;
  amount: string;
} & IntentRateColumns;

/**
 * Entries per page read by valueLedger: a page's postings are in memory at once, the ledger's
 * never are (a million entries are about three million postings).
 */
export const VALUATION_PAGE_ENTRIES = 5000;

const intentCurrencyCode = new Map<number, string>(Object.entries(Currency).map(([code, n]) => [n, code]));

/**
 * Values the ledger in `currency` as of `at` (docs/accounting.md, "Valuation"): reads the postings
 * with their intents' own rates (rule 1's metadata, intentRateJoin) and the imported rates, values
 * each entry (valueEntry) and revalues the holdings at the closing day's rate. Nothing is written to the
 * ledger; with `recordFindings` each missing rate is a `valuation_rate_missing` finding, and those
 * of the same currency that a rate now covers are resolved.
 *
 * The postings are read in keyset pages of whole entries (`pageSize`, by default
 * VALUATION_PAGE_ENTRIES, ordered by entry id), inside one repeatable-read transaction, so memory
 * is one page and the accounts' running sums whatever the ledger's size (the intents' own rates
 * come with their entries, not as a table of every intent), and every page sees the same snapshot
 * of the books, as one query would.
 */
export async function valueLedger(
  db: Db,
  options: {
    currency: string;
    at?: Date;
    storeId?: string;
    stores?: readonly StoreValuation[];
    recordFindings?: boolean;
    /** Entries per page read; only tests set it (small pages, to prove no entry is split). */
    pageSize?: number;
  },
): Promise<LedgerValuation> {
  const at = options.at ?? new Date();
  const currency = options.currency;
  const minorUnit = currencyMinorUnit(currency);
  const closingDate = new Date(at.getTime() - 1).toISOString().slice(0, 10);
  const pageSize = options.pageSize ?? VALUATION_PAGE_ENTRIES;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1)
    throw new RangeError('pageSize must be a positive integer');

  const accounts = new Map<string, ValuedAccount>();
  const rounding = new Map<string, bigint>();
  const missing = new Map<string, { storeId: string; date: string; symbol: string }>();
  const superseded = new Map<string, RateSupersession>();
  const usedRate = (rate: ChosenRate | undefined): ChosenRate | undefined => {
    const s = rate?.supersession;
    if (s) superseded.set(`${s.date}:${s.asset}`, s);
    return rate;
  };
  const rateOn = await db.transaction(
    async (tx) => {
      const rateOn = await loadRateBook(tx, currency, options.stores ?? []);
      let after = '0';
      for (;;) {
        // Whole entries per page: the limit is on the entries, their postings join after it. An
        // entry with no posting before `at` still comes back (left join, code null) so that the
        // page's last id and its count of entries are right.
        const { rows } = await tx.execute<PostingRow>(sql`
          with page as (
            select e.id, e.store_id, e.occurred_at, e.ref_type, e.ref_id
              from ledger_entries e
             where e.id > ${after}::bigint
               ${options.storeId === undefined ? sql`` : sql`and e.store_id = ${options.storeId}`}
             order by e.id
             limit ${pageSize})
          select page.id::text as entry_id, page.store_id,
                 (page.occurred_at at time zone 'UTC')::date::text as day,
                 page.ref_type, page.ref_id, a.code, a.symbol, a.decimals, p.amount::text as amount,
                 ir.intent_currency, ir.intent_rate
            from page
            ${intentRateJoin(sql`page`)}
            left join (ledger_postings p join ledger_accounts a on a.id = p.account_id)
              on p.entry_id = page.id and p.occurred_at < ${at.toISOString()}::timestamptz
           order by page.id, p.id`);
        let entries = 0;
        for (let i = 0; i < rows.length; ) {
          const first = rows[i] as PostingRow;
          let j = i;
          while (j < rows.length && (rows[j] as PostingRow).entry_id === first.entry_id) j++;
          const entryRows = rows.slice(i, j);
          i = j;
          entries++;
          after = first.entry_id;
          if (first.code === null) continue;
          addEntry(first, entryRows);
        }
        if (entries < pageSize) return rateOn;
      }

      function addEntry(first: PostingRow, entryRows: PostingRow[]): void {
        const intent = intentRateOf(first);
        const valued = valueEntry(
          entryRows.map((r) => ({
            accountCode: r.code as string,
            symbol: r.symbol,
            decimals: r.decimals,
            amount: BigInt(r.amount),
          })),
          (symbol) => usedRate(rateOn(first.store_id, first.day, symbol, intent)),
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
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
  for (const a of accounts.values()) {
    if (!isHoldingAccount(a.code) || a.unvalued > 0) continue;
    const revalued = revalueHolding(
      { balance: a.balance, decimals: a.decimals, valuedCost: a.value },
      usedRate(rateOn(a.storeId, closingDate, a.symbol, null)),
      minorUnit,
    );
    if (revalued) {
      a.closingValue = revalued.closingValue;
      a.unrealised = revalued.unrealised;
    }
  }

  if (options.recordFindings)
    await recordMissingRates(db, currency, [...missing.values()], { storeId: options.storeId, before: at });
  return {
    currency,
    minorUnit,
    closingDate,
    accounts: [...accounts.values()].sort((x, y) => (x.code < y.code ? -1 : x.code > y.code ? 1 : 0)),
    rounding,
    missing: [...missing.values()],
    superseded: [...superseded.values()].sort((x, y) =>
      x.date === y.date ? (x.asset < y.asset ? -1 : 1) : x.date < y.date ? -1 : 1,
    ),
  };
}

/**
 * The own rate of an entry's fiat-priced intent, as rule 1's entry records it in its metadata:
 * `currency` (the service's number of the currency the intent was priced in) and `currency_rate`.
 */
export interface IntentRate {
  currency: string | null;
  rate: string;
}

/** The columns intentRateJoin adds to a row. */
export type IntentRateColumns = {
  intent_currency: string | null;
  intent_rate: string | null;
};

/**
 * `left join lateral ... ir`: for an entry (the relation aliased `entry`) whose ref is a checkout
 * intent, `ir.intent_currency` and `ir.intent_rate` of that intent's rule-1 entry, so that the
 * rate comes with the entry and no table of every intent's rate is held (it grew with the ledger,
 * docs/benchmarks.md). Every entry of the intent gets it, not only rule 1's (a payment proven, a
 * reversal). An intent confirmed again after a reversal has several rule-1 entries: the latest that
 * carries a rate counts. One probe of ledger_entries_ref_kind_idx per entry.
 */
export function intentRateJoin(entry: SQL): SQL {
  return sql`left join lateral (
      select r.metadata->>'currency' as intent_currency, r.metadata->>'currency_rate' as intent_rate
        from ledger_entries r
       where ${entry}.ref_type = 'checkout_intent' and r.ref_type = 'checkout_intent'
         and r.ref_id = ${entry}.ref_id and r.kind = 'checkout.confirmed'
         and r.metadata->>'currency_rate' is not null
       order by r.id desc
       limit 1) ir on true`;
}

/** The intent rate of a row read with intentRateJoin, or null when its entry has none. */
export function intentRateOf(row: IntentRateColumns): IntentRate | null {
  return row.intent_rate === null ? null : { currency: row.intent_currency, rate: row.intent_rate };
}

/**
 * The intent rates of some entries (a page of the read API's), by entry id; entries of no
 * fiat-priced intent are absent.
 */
export async function intentRatesOf(
  db: DbExecutor,
  entryIds: readonly bigint[],
): Promise<Map<string, IntentRate>> {
  if (entryIds.length === 0) return new Map();
  const { rows } = await db.execute<{ id: string } & IntentRateColumns>(sql`
    select e.id::text as id, ir.intent_currency, ir.intent_rate
      from ledger_entries e
      ${intentRateJoin(sql`e`)}
     where e.id = any(${sql.param(entryIds.map(String))}::bigint[]) and ir.intent_rate is not null`);
  const rates = new Map<string, IntentRate>();
  for (const r of rows) {
    const rate = intentRateOf(r);
    if (rate !== null) rates.set(r.id, rate);
  }
  return rates;
}

/**
 * The rate of a posting: its store, its entry's UTC day, its coin, and its entry's intent's own
 * rate (intentRateOf; null for an entry of no fiat-priced intent, and for a closing rate).
 */
export type RateBook = (
  storeId: string,
  day: string,
  symbol: string,
  intent: IntentRate | null,
) => ChosenRate | undefined;

/**
 * The rates that can value postings in `currency` besides an intent's own: the imported rates and
 * each store's par. Read once; the lookups are then in memory (a rate per day and coin is small
 * beside the postings). An intent's own rate is passed in by the caller, read with its entry
 * (intentRateJoin), and counts only when the intent was priced in `currency`.
 */
export async function loadRateBook(
  db: DbExecutor,
  currency: string,
  stores: readonly StoreValuation[],
): Promise<RateBook> {
  const imported = await db.execute<{ day: string; asset: string; rate: string }>(sql`
    select rate_date::text as day, asset, rate::text as rate
      from rates where currency = ${currency} and source = 'import'`);
  const importedRate = new Map(imported.rows.map((r) => [`${r.day}:${r.asset}`, r.rate]));
  // A person's supersession replaces the imported rate of its day (the latest one counts).
  const supersessions = await latestSupersessions(db, currency);
  for (const [key, s] of supersessions) importedRate.set(key, s.rate);
  const marked = (rate: ChosenRate | undefined, day: string, symbol: string): ChosenRate | undefined => {
    const s = rate?.source === 'import' ? supersessions.get(`${day}:${symbol}`) : undefined;
    return rate && s ? { ...rate, supersession: s } : rate;
  };
  const parOf = new Map(stores.map((s) => [s.storeId, s.par]));
  // Every posting asks for its rate, and parsing the rate's text each time was a large part of
  // the valuation's cost (docs/benchmarks.md): a posting without its intent's own rate depends on
  // (store, day, coin) only, so that choice is made once per key; few days and coins, a small map.
  const chosen = new Map<string, ChosenRate | null>();
  return (storeId, day, symbol, intent) => {
    if (
      intent !== null &&
      intent.currency !== null &&
      intentCurrencyCode.get(Number(intent.currency)) === currency
    )
      return marked(
        chooseRate({
          intent: intent.rate,
          imported: importedRate.get(`${day}:${symbol}`),
          par: parOf.get(storeId)?.get(symbol),
        }),
        day,
        symbol,
      );
    const key = `${storeId}\u0000${day}:${symbol}`;
    let rate = chosen.get(key);
    if (rate === undefined) {
      rate =
        marked(
          chooseRate({
            imported: importedRate.get(`${day}:${symbol}`),
            par: parOf.get(storeId)?.get(symbol),
          }),
          day,
          symbol,
        ) ?? null;
      chosen.set(key, rate);
    }
    return rate ?? undefined;
  };
}

/** The latest supersession of each day's imported rate in `currency`, by `<day>:<asset>`. */
async function latestSupersessions(db: DbExecutor, currency: string): Promise<Map<string, RateSupersession>> {
  const { rows } = await db.execute<{
    day: string;
    asset: string;
    rate: string;
    imported: string;
    note: string;
    made_by: string;
    made_at: Date | string;
  }>(sql`
    select distinct on (s.rate_date, s.asset) s.rate_date::text as day, s.asset, s.rate::text as rate,
           r.rate::text as imported, s.note, s.made_by, s.made_at
      from rate_supersessions s join rates r on r.id = s.rate_id
     where s.currency = ${currency}
     order by s.rate_date, s.asset, s.id desc`);
  return new Map(
    rows.map((r) => [
      `${r.day}:${r.asset}`,
      {
        date: r.day,
        asset: r.asset,
        currency,
        rate: r.rate,
        imported: r.imported,
        note: r.note,
        by: r.made_by,
        at: new Date(r.made_at).toISOString(),
      },
    ]),
  );
}
