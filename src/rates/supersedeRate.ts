import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { StablebooksError } from '../errors/stablebooksError.ts';
import { parseExactRate } from '../money/exactRate.ts';
import { isCalendarDate } from './parseRatesCsv.ts';

/** A supersession that cannot be made as asked (bad input, no imported rate): nothing written. */
export class RateSupersedeError extends StablebooksError {
  override name = 'RateSupersedeError';
  readonly retryable = false;
}

/** Class of the two-key advisory lock on one day's rate (other locks use other classes). */
const RATE_LOCK_CLASS = 0x0a_7e_5e;

export interface SupersedeRequest {
  date: string;
  asset: string;
  currency: string;
  rate: string;
  note: string;
  by: string;
}

export type SupersedeOutcome =
  | { kind: 'superseded'; id: bigint; previous: string; rate: string }
  /** The rate in force already is this one: nothing written. */
  | { kind: 'unchanged'; rate: string };

/**
 * `stablebooks rates supersede`: from now on the valuation uses `rate` for the day, coin and
 * currency of an imported rate, and says so (docs/accounting.md, "Valuation"). A row of
 * `rate_supersessions`; the imported rate and earlier supersessions stay as they were, so rates
 * stay append-only and every earlier valuation can be explained. Only an imported rate is
 * superseded: an intent's own rate is the service's fact, and par is configuration.
 */
export async function supersedeRate(tx: DbExecutor, request: SupersedeRequest): Promise<SupersedeOutcome> {
  const { date, asset, currency } = request;
  if (!isCalendarDate(date))
    throw new RateSupersedeError(`--date: ${JSON.stringify(date)} is not a YYYY-MM-DD day`);
  if (asset !== 'USDT' && asset !== 'USDC')
    throw new RateSupersedeError(`--asset: ${JSON.stringify(asset)} is not USDT or USDC`);
  if (!/^[A-Z]{3}$/.test(currency))
    throw new RateSupersedeError(
      `--currency: ${JSON.stringify(currency)} is not an ISO 4217 code in capitals`,
    );
  const rate = parseExactRate(request.rate);
  if (rate === undefined)
    throw new RateSupersedeError(
      `--rate: ${JSON.stringify(request.rate.slice(0, 40))} is not a plain decimal above zero (no sign, exponent or spaces)`,
    );
  const note = request.note.trim();
  const by = request.by.trim();
  if (note === '') throw new RateSupersedeError('--note: must say something');
  if (by === '') throw new RateSupersedeError('--by: must say something');
  await tx.execute(
    sql`select pg_advisory_xact_lock(${RATE_LOCK_CLASS}, hashtext(${`${date}:${asset}:${currency}`}))`,
  );
  const { rows } = await tx.execute<{ id: string; current: string; same: boolean }>(sql`
    select r.id::text, coalesce(s.rate, r.rate)::text as current, coalesce(s.rate, r.rate) = ${rate.text}::numeric as same
      from rates r
      left join lateral (
        select s.rate from rate_supersessions s where s.rate_id = r.id order by s.id desc limit 1) s on true
     where r.rate_date = ${date}::date and r.asset = ${asset} and r.currency = ${currency}
       and r.source = 'import' and r.source_ref = ''`);
  const imported = rows[0];
  if (!imported)
    throw new RateSupersedeError(
      `no imported ${asset} rate in ${currency} on ${date} to supersede; import it with stablebooks rates import`,
    );
  if (imported.same) return { kind: 'unchanged', rate: imported.current };
  const inserted = await tx.execute<{ id: string }>(sql`
    insert into rate_supersessions (rate_id, rate_date, asset, currency, rate, previous_rate, note, made_by)
    values (${imported.id}::bigint, ${date}::date, ${asset}, ${currency}, ${rate.text}::numeric,
            ${imported.current}::numeric, ${note}, ${by})
    returning id::text`);
  return {
    kind: 'superseded',
    id: BigInt(inserted.rows[0]?.id ?? '0'),
    previous: imported.current,
    rate: rate.text,
  };
}
