/**
 * Numbers as a Grafana panel writes them, for the units our dashboards use: durations (`s`, `ms`),
 * rates (`reqps`, `ops`), ratios (`percentunit`, `percent`), `bytes`, `short`, and none. With no
 * `decimals` set, small numbers keep about three significant digits and trailing zeros go.
 */

function autoDecimals(value: number): number {
  if (value === 0 || Number.isInteger(value)) return 0;
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  return Math.max(0, Math.min(6, 2 - magnitude));
}

function fixed(value: number, decimals: number | undefined): string {
  if (decimals !== undefined) return value.toFixed(decimals);
  const text = value.toFixed(autoDecimals(value));
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}

function scaled(value: number, factor: number, suffixes: string[], decimals: number | undefined): string {
  let index = 0;
  let scaledValue = value;
  while (Math.abs(scaledValue) >= factor && index < suffixes.length - 1) {
    scaledValue /= factor;
    index += 1;
  }
  const suffix = suffixes[index] ?? '';
  return `${fixed(scaledValue, decimals)}${suffix ? ` ${suffix}` : ''}`;
}

const DURATIONS: Array<[number, string]> = [
  [31_536_000, 'year'],
  [604_800, 'week'],
  [86_400, 'day'],
  [3_600, 'hour'],
  [60, 'min'],
  [1, 's'],
];

function duration(seconds: number, decimals: number | undefined): string {
  const size = Math.abs(seconds);
  if (size === 0) return '0 s';
  if (size < 1) return `${fixed(seconds * 1000, decimals)} ms`;
  for (const [unitSeconds, name] of DURATIONS) {
    if (size >= unitSeconds) return `${fixed(seconds / unitSeconds, decimals)} ${name}`;
  }
  return `${fixed(seconds, decimals)} s`;
}

/** Prometheus sample text ("12.5", "NaN", "+Inf") or a number, written in `unit`. */
export function formatValue(raw: string | number, unit?: string, decimals?: number): string {
  const value = typeof raw === 'number' ? raw : Number(raw);
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  switch (unit) {
    case undefined:
    case '':
    case 'none':
      return fixed(value, decimals);
    case 'short':
      return scaled(value, 1000, ['', 'K', 'Mil', 'Bil', 'Tri'], decimals);
    case 's':
      return duration(value, decimals);
    case 'ms':
      return duration(value / 1000, decimals);
    case 'percentunit':
      return `${fixed(value * 100, decimals)}%`;
    case 'percent':
      return `${fixed(value, decimals)}%`;
    case 'reqps':
      return `${fixed(value, decimals)} req/s`;
    case 'ops':
      return `${fixed(value, decimals)} ops/s`;
    case 'bytes':
      return scaled(value, 1024, ['B', 'KiB', 'MiB', 'GiB', 'TiB'], decimals);
    default:
      return `${fixed(value, decimals)} ${unit}`;
  }
}
