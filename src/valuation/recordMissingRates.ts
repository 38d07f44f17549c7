import { sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';

/**
 * Records each (store, day, coin) without a rate in `currency` as a `valuation_rate_missing`
 * finding, and resolves those a rate now covers, only within what was valued: the store (when the
 * valuation was of one) and the days before `before`. A finding outside that scope is left as it
 * is: valuing one store, or an earlier period, says nothing about another store's or a later day's
 * rates.
 */
export async function recordMissingRates(
  db: Db,
  currency: string,
  missing: readonly { storeId: string; date: string; symbol: string }[],
  scope: { storeId?: string; before: Date },
): Promise<void> {
  // The valuation's last day is the day of `before - 1 ms` (valueLedger's closing day).
  const lastDay = new Date(scope.before.getTime() - 1).toISOString().slice(0, 10);
  await db.transaction(async (tx) => {
    const still = new Set(missing.map((m) => `${m.storeId}:${m.date}:${m.symbol}:${currency}`));
    const open = await tx.execute<{ ref_id: string }>(sql`
      select ref_id from findings
       where kind = 'valuation_rate_missing' and resolved_at is null and ref_id like ${`%:${currency}`}
         and details->>'currency' = ${currency} and details->>'rate_date' <= ${lastDay}
         ${scope.storeId === undefined ? sql`` : sql`and store_id = ${scope.storeId}`}`);
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
