import { type SQL, sql } from 'drizzle-orm';
import type { ChainRegistry } from '../../config/chainRegistry.ts';
import type { ReconSettings } from '../../config/loadConfig.ts';
import type { DbExecutor } from '../../db/database.ts';
import type { OwnedKind } from '../foundFindings.ts';
import type { CheckResult } from '../report/reportModel.ts';

/** What every check reads: one transaction, the scope of the run and its windows. */
export interface CheckContext {
  tx: DbExecutor;
  /** null: every store. */
  storeId: string | null;
  /** The run's clock (the sandbox's in tests and the demo), for every window. */
  now: Date;
  settings: ReconSettings;
  chains: ChainRegistry;
}

export interface CheckOutcome {
  result: CheckResult;
  /**
   * The (kind, ref type) pairs this check decided (see foundFindings.ts): the run resolves their
   * open findings that were not found again. A check that could not read its source returns none;
   * status `error` alone does not disown them.
   */
  owned: OwnedKind[];
}

/**
 * The accepted tokens as a SQL row source `tk(chain_id, token, symbol, decimals, unit)`; `unit` is
 * 10^decimals as an exact numeric, so a query multiplies by it instead of computing power() per row.
 */
export function tokensTable(chains: ChainRegistry): SQL {
  const rows = chains
    .chains()
    .flatMap((c) => c.tokens)
    .map(
      (t) =>
        sql`(${t.chainId}::bigint, ${t.address.toLowerCase()}::text, ${t.symbol}::text, ${t.decimals}::int, ${sql.raw(`${10n ** BigInt(t.decimals)}`)}::numeric)`,
    );
  if (rows.length === 0)
    return sql`(select null::bigint, null::text, null::text, null::int, null::numeric where false) as tk(chain_id, token, symbol, decimals, unit)`;
  return sql`(values ${sql.join(rows, sql`, `)}) as tk(chain_id, token, symbol, decimals, unit)`;
}

/** An amount in base units as the token's exact decimal string, in SQL ("12.5", as formatDecimalAmount). */
export function decimalText(units: SQL, decimals: SQL): SQL {
  return sql`trim_scale(round((${units})::numeric / power(10::numeric, ${decimals}), ${decimals}))::text`;
}

/** A decimal string (as the service sends amounts) in base units, in SQL (numeric, exact); `unit` is tk.unit. */
export function baseUnits(decimalString: SQL, unit: SQL): SQL {
  return sql`trunc((${decimalString})::numeric * ${unit})`;
}

export function storeFilter(column: SQL, storeId: string | null): SQL {
  return storeId === null ? sql`true` : sql`${column} = ${storeId}`;
}

export function check(
  name: string,
  layer: CheckResult['layer'],
  count: number,
  detail: string,
  owned: OwnedKind[],
): CheckOutcome {
  return { result: { name, layer, status: count === 0 ? 'pass' : 'fail', count, detail }, owned };
}
