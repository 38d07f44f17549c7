import { StablebooksError } from '../errors/stablebooksError.ts';
/**
 * The period of a reconciliation run: half-open [from, to), UTC. The scheduled run covers the
 * previous UTC day; `stablebooks report` takes --from / --to (a date means its UTC midnight).
 */
export interface Period {
  from: Date;
  to: Date;
}

const DAY_MS = 86_400_000;
const MAX_DAYS = 366;

export class PeriodError extends StablebooksError {
  override readonly name = 'PeriodError';
  readonly retryable = false;
}

export function previousUtcDay(now: Date): Period {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return { from: new Date(today - DAY_MS), to: new Date(today) };
}

export function parseTime(flag: string, text: string): Date {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const ok = dateOnly || /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(text);
  const date = new Date(dateOnly ? `${text}T00:00:00Z` : text);
  // Date rolls 2026-02-30 over to March 2nd; a calendar date must read back as written.
  const day = new Date(`${text.slice(0, 10)}T00:00:00Z`);
  const realDay = ok && !Number.isNaN(day.getTime()) && day.toISOString().startsWith(text.slice(0, 10));
  if (!ok || !realDay || Number.isNaN(date.getTime()))
    throw new PeriodError(`${flag}: ${text} is not a date (2026-11-21) or an ISO 8601 time with a zone`);
  return date;
}

/** --from / --to as given; a missing end is one day from the other, both missing is yesterday. */
export function parsePeriod(from: string | undefined, to: string | undefined, now: Date): Period {
  if (from === undefined && to === undefined) return previousUtcDay(now);
  const f = from === undefined ? undefined : parseTime('--from', from);
  const t = to === undefined ? undefined : parseTime('--to', to);
  const period = {
    from: f ?? new Date((t as Date).getTime() - DAY_MS),
    to: t ?? new Date((f as Date).getTime() + DAY_MS),
  };
  if (period.from >= period.to) throw new PeriodError('--from must be before --to');
  if (period.to.getTime() - period.from.getTime() > MAX_DAYS * DAY_MS)
    throw new PeriodError(`a period is at most ${MAX_DAYS} days; run one report per year or month`);
  return period;
}
