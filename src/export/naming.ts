import type { AccountType } from '../ledger/accounts.ts';
import { type ExportAccount, type ExportAsset, ExportInputError, uniqueNames } from './exportModel.ts';

/**
 * Account and commodity names per tool (README.md, "Exporting the books").
 *
 * - Top level from the account's type: asset Assets, liability Liabilities, equity Equity, income
 *   Income, expense Expenses (the names hledger and beancount know as those types).
 * - hledger and ledger keep the rest of the code readable: `assets:wallet:st_a:1:USDT` is
 *   `Assets:wallet:st_a:1:USDT`. A character other than a letter, digit, `_`, `.` or `-` becomes `_`.
 * - beancount needs components of `[A-Z0-9][A-Za-z0-9-]*`: the row of the chart in CamelCase, `_`
 *   and other characters as `-`, a leading lowercase letter raised: `Assets:Wallet:St-a:1:USDT`.
 * - Commodity, every format: `<SYMBOL>.<chain id>` (`USDT.1`, `USDT.56`), valid for beancount
 *   (`[A-Z][A-Z0-9'._-]{0,22}[A-Z0-9]`) and quoted in hledger and ledger, where a digit needs quotes.
 * - Two accounts (or tokens) whose names would merge get `-<account id>` (`-<n>`) appended.
 * - `--value`'s rounding line (ROUNDING_ACCOUNT, `fx:rounding`) keeps its name in hledger and
 *   ledger; beancount needs a typed top level: BEANCOUNT_ROUNDING_ACCOUNT (docs/decisions.md).
 */
export const OPENING_ACCOUNT = 'Equity:Opening-Balances';

export const BEANCOUNT_ROUNDING_ACCOUNT = 'Equity:Fx:Rounding';

const TOP: Record<AccountType, string> = {
  asset: 'Assets',
  liability: 'Liabilities',
  equity: 'Equity',
  income: 'Income',
  expense: 'Expenses',
};

export function topLevel(type: AccountType): string {
  return TOP[type];
}

/** Every top-level name, in the order the files declare them. */
export const TOP_LEVELS: ReadonlyArray<[AccountType, string]> = Object.entries(TOP) as Array<
  [AccountType, string]
>;

function plainComponent(text: string): string {
  const clean = text.replace(/[^\p{L}\p{N}_.-]/gu, '_');
  return clean === '' ? '_' : clean;
}

function beanComponent(text: string): string {
  let clean = text.replace(/[^A-Za-z0-9-]/g, '-');
  clean = clean.charAt(0).toUpperCase() + clean.slice(1);
  return /^[A-Z0-9]/.test(clean) ? clean : `X${clean}`;
}

function camel(text: string): string {
  return text
    .split(/[_\s]+/)
    .filter(Boolean)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/** hledger and ledger: `Assets:wallet:st_a:1:USDT`, unique over the given accounts. */
export function plainAccountNames(accounts: readonly ExportAccount[]): Map<ExportAccount, string> {
  return uniqueNames(
    accounts,
    (a) =>
      [topLevel(a.type), a.kindName, a.storeId, String(a.chainId), a.symbol]
        .map((c, i) => (i === 0 ? c : plainComponent(c)))
        .join(':'),
    (a) => a.id.toString(),
  );
}

/** beancount: `Assets:Wallet:St-a:1:USDT`, unique over the given accounts. */
export function beancountAccountNames(accounts: readonly ExportAccount[]): Map<ExportAccount, string> {
  return uniqueNames(
    accounts,
    (a) =>
      [
        topLevel(a.type),
        beanComponent(camel(a.kindName)),
        beanComponent(a.storeId),
        String(a.chainId),
        beanComponent(a.symbol),
      ].join(':'),
    (a) => a.id.toString(),
  );
}

const COMMODITY_MAX = 24;

function commodityOf(symbol: string, chainId: number): string {
  const chain = `.${chainId}`;
  let sym = symbol.toUpperCase().replace(/[^A-Z0-9._-]/g, '-');
  if (!/^[A-Z]/.test(sym)) sym = `X${sym}`;
  return `${sym.slice(0, COMMODITY_MAX - chain.length - 2)}${chain}`;
}

/** The tokens of the accounts, one commodity each, in asset order. */
export function exportAssets(accounts: readonly ExportAccount[]): ExportAsset[] {
  const byAsset = new Map<string, Omit<ExportAsset, 'commodity'>>();
  for (const a of accounts) {
    const seen = byAsset.get(a.asset);
    // Amounts are base units of the account's decimals; two scales in one commodity would mix units.
    if (seen && seen.decimals !== a.decimals)
      throw new ExportInputError(
        `accounts of asset ${a.asset} count in ${seen.decimals} and ${a.decimals} decimals (${a.code}); the chain registry changed the token's decimals`,
      );
    if (!seen)
      byAsset.set(a.asset, {
        asset: a.asset,
        chainId: a.chainId,
        token: a.token,
        symbol: a.symbol,
        decimals: a.decimals,
      });
  }
  const assets = [...byAsset.values()].sort((a, b) =>
    a.symbol === b.symbol
      ? a.chainId - b.chainId || (a.token < b.token ? -1 : 1)
      : a.symbol < b.symbol
        ? -1
        : 1,
  );
  const names = uniqueNames(
    assets,
    (a) => commodityOf(a.symbol, a.chainId),
    (a) => String(assets.indexOf(a) + 1),
  );
  return assets.map((a) => ({ ...a, commodity: names.get(a) ?? commodityOf(a.symbol, a.chainId) }));
}
