import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import { formatFiat } from '../../money/formatFiat.ts';
import { renderTable } from '../../text/table.ts';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';
import { withDatabase } from '../withDatabase.ts';

/**
 * `ledger balances --value CUR`: every account's token balance beside its value in CUR
 * (docs/accounting.md, "Valuation"), holdings revalued at the closing day's rate. An unvalued
 * account says so (its figure is incomplete), never shows a zero. Each missing rate is recorded
 * as a `valuation_rate_missing` finding. Par comes from STORES_FILE when it is set.
 */
export async function printValuedBalances(opts: {
  value: string;
  store?: string;
  at?: Date;
  json?: boolean;
}): Promise<void> {
  if (!/^[A-Z]{3}$/.test(opts.value))
    throw new CliError(
      `--value: ${JSON.stringify(opts.value)} is not an ISO 4217 code in capitals, e.g. EUR`,
    );
  const stores = await storesPar(opts.value);
  const { valueLedger } = await import('../../valuation/valueLedger.ts');
  await withDatabase({ max: 2 }, async (db) => {
    const v = await valueLedger(db, {
      currency: opts.value,
      at: opts.at,
      storeId: opts.store,
      stores,
      recordFindings: true,
    });
    const fiat = (minor: bigint | null) => (minor === null ? null : formatFiat(minor, v.minorUnit));
    const shown = (minor: bigint | null) => (minor === null ? 'unvalued' : `${fiat(minor)} ${v.currency}`);
    printResult(
      opts.json,
      {
        currency: v.currency,
        closing_date: v.closingDate,
        accounts: v.accounts.map((a) => ({
          code: a.code,
          store_id: a.storeId,
          symbol: a.symbol,
          balance: a.balance.toString(),
          balance_decimal: formatDecimalAmount(a.balance, a.decimals),
          value: a.unvalued > 0 ? null : fiat(a.value),
          unvalued_postings: a.unvalued,
          closing_value: fiat(a.closingValue),
          unrealised_fx: fiat(a.unrealised),
        })),
        rounding: Object.fromEntries([...v.rounding].map(([store, minor]) => [store, fiat(minor)])),
        missing_rates: v.missing,
        superseded_rates: v.superseded,
      },
      () =>
        [
          renderTable(
            [
              'account',
              'balance',
              `value (${v.currency})`,
              `closing value (${v.closingDate})`,
              'unrealised FX',
            ],
            v.accounts.map((a) => [
              a.code,
              `${formatDecimalAmount(a.balance, a.decimals)} ${a.symbol}`,
              a.unvalued > 0 ? `unvalued (${a.unvalued} postings without a rate)` : shown(a.value),
              a.closingValue === null ? '-' : shown(a.closingValue),
              a.unrealised === null ? '-' : shown(a.unrealised),
            ]),
            [1, 2, 3, 4],
          ),
          ...[...v.rounding].map(([store, minor]) => `fx:rounding (${store}): ${shown(minor)}`),
          ...v.missing.map(
            (m) => `no ${m.symbol} rate in ${v.currency} on ${m.date} (store ${m.storeId}): unvalued`,
          ),
          ...v.superseded.map(
            (r) =>
              `${r.asset} rate in ${r.currency} on ${r.date}: ${r.rate} (import (superseded), was ${r.imported}; by ${r.by} at ${r.at}: ${r.note})`,
          ),
        ].join('\n'),
    );
  });
}

/** Par policies of the stores valued in this currency, read from STORES_FILE without secrets. */
export async function storesPar(
  currency: string,
): Promise<{ storeId: string; par: ReadonlyMap<string, string> }[]> {
  const path = process.env.STORES_FILE;
  if (!path) return [];
  const [{ readFile }, { storesFileSchema }] = await Promise.all([
    import('node:fs/promises'),
    import('../../config/stores.ts'),
  ]);
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch {
    throw new CliError(`STORES_FILE: ${path}: cannot be read as JSON`);
  }
  const parsed = storesFileSchema.safeParse(raw);
  if (!parsed.success)
    throw new CliError(`STORES_FILE: ${path}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data
    .filter((s) => s.functional_currency === currency)
    .map((s) => ({ storeId: s.store_id, par: new Map(Object.entries(s.par)) }));
}
