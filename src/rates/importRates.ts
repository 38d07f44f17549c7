import { sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { StablebooksError } from '../errors/stablebooksError.ts';
import type { ImportedRate } from './parseRatesCsv.ts';

/** A rates file that conflicts with rates already imported: nothing of it was written. */
export class RateConflictError extends StablebooksError {
  override name = 'RateConflictError';
  readonly retryable = false;
}

export interface ImportOutcome {
  /** Rates written by this import. */
  added: number;
  /** Rates the table already held, with the same value: unchanged. */
  unchanged: number;
}

/**
 * Writes imported rates in one transaction: all or nothing. A rate already there with the same
 * value is left alone (re-importing a file changes nothing); with another value it refuses the
 * whole file, naming the line, since a rate is a fact and a valuation made with it may have been
 * reported (docs/accounting.md, "Valuation").
 */
export async function importRates(db: Db, rates: readonly ImportedRate[]): Promise<ImportOutcome> {
  if (rates.length === 0) return { added: 0, unchanged: 0 };
  return db.transaction(async (tx) => {
    // One JSON parameter for the whole file: the rows travel as text and are read back by
    // PostgreSQL, so each rate reaches numeric from its decimal string, never through a float.
    const file = JSON.stringify(
      rates.map((r) => ({
        line: r.line,
        rate_date: r.date,
        asset: r.asset,
        currency: r.currency,
        rate: r.rate,
      })),
    );
    const conflict = await tx.execute<{
      line: number;
      rate_date: string;
      asset: string;
      currency: string;
      held: string;
      given: string;
    }>(sql`
      select f.line, f.rate_date::text, f.asset, f.currency, r.rate::text as held, f.rate as given
        from jsonb_to_recordset(${file}::jsonb) as f(line int, rate_date date, asset text, currency text, rate text)
        join rates r on r.rate_date = f.rate_date and r.asset = f.asset and r.currency = f.currency
                    and r.source = 'import' and r.source_ref = ''
       where r.rate <> f.rate::numeric
       order by f.line
       limit 1`);
    const first = conflict.rows[0];
    if (first)
      throw new RateConflictError(
        `line ${first.line}: ${first.rate_date},${first.asset},${first.currency} was imported before as ${first.held}, not ${first.given}; nothing was imported`,
      );
    const inserted = await tx.execute(sql`
      insert into rates (rate_date, asset, currency, rate, source, source_ref)
      select f.rate_date, f.asset, f.currency, f.rate::numeric, 'import', ''
        from jsonb_to_recordset(${file}::jsonb) as f(line int, rate_date date, asset text, currency text, rate text)
      on conflict (rate_date, asset, currency, source, source_ref) do nothing`);
    const added = inserted.rowCount ?? 0;
    return { added, unchanged: rates.length - added };
  });
}
