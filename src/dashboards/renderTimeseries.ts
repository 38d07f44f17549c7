/**
 * A time series panel's chart as inline SVG: one polyline per series (broken where samples are
 * missing), the y axis with round ticks in the panel's unit, the x axis in UTC over the whole
 * window, as Grafana draws it. Pure: the caller gives the size in pixels and gets markup back.
 */

import { escapeHtml } from '../html/escapeHtml.ts';
import { SERIES_PALETTE, THEME } from './colors.ts';
import { formatValue } from './formatValue.ts';

export interface ChartSeries {
  name: string;
  /** Seconds since the epoch; a value that is not finite is a gap. */
  points: Array<{ time: number; value: number }>;
}

export interface ChartOptions {
  width: number;
  height: number;
  /** The window, seconds since the epoch. */
  start: number;
  end: number;
  stepSeconds: number;
  unit?: string;
  decimals?: number;
  min?: number;
  max?: number;
}

export function seriesColor(index: number): string {
  return SERIES_PALETTE[index % SERIES_PALETTE.length]!;
}

function niceStep(range: number, maxTicks: number): number {
  const rough = range / Math.max(1, maxTicks);
  const power = 10 ** Math.floor(Math.log10(rough));
  const n = rough / power;
  const nice = n <= 1 ? 1 : n <= 2 ? 2 : n <= 2.5 ? 2.5 : n <= 5 ? 5 : 10;
  return nice * power;
}

function yDomain(values: number[], options: ChartOptions): [number, number] {
  let lo = options.min ?? Math.min(...values);
  let hi = options.max ?? Math.max(...values);
  if (lo === hi) {
    // A flat line sits in the middle of an axis from zero.
    if (lo > 0) lo = 0;
    else if (hi < 0) hi = 0;
    else hi = 1;
    if (lo === hi) hi = lo + 1;
    if (options.min === undefined && lo < 0 && hi === 0) lo = 2 * lo;
    if (options.max === undefined && hi > 0 && lo === 0) hi = 2 * hi;
  }
  return [lo, hi];
}

const X_INTERVALS = [1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

function xTickLabel(time: number, interval: number, span: number): string {
  const iso = new Date(time * 1000).toISOString();
  if (span > 2 * 86400) return `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
  if (interval < 60) return iso.slice(11, 19);
  return iso.slice(11, 16);
}

function px(value: number): string {
  return value.toFixed(1);
}

/** Splits a series where a sample is missing (more than 1.5 steps apart) or not a number. */
function segments(points: ChartSeries['points'], stepSeconds: number): Array<ChartSeries['points']> {
  const out: Array<ChartSeries['points']> = [];
  let current: ChartSeries['points'] = [];
  let lastTime = Number.NEGATIVE_INFINITY;
  for (const point of points) {
    const gap = point.time - lastTime > stepSeconds * 1.5;
    if (!Number.isFinite(point.value) || gap) {
      if (current.length > 0) out.push(current);
      current = [];
    }
    if (Number.isFinite(point.value)) current.push(point);
    lastTime = point.time;
  }
  if (current.length > 0) out.push(current);
  return out;
}

export function renderTimeseriesSvg(series: ChartSeries[], options: ChartOptions): string {
  const { width, height, start, end } = options;
  const values = series.flatMap((s) => s.points.map((p) => p.value)).filter(Number.isFinite);
  const open = `<svg class="chart" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img">`;
  if (values.length === 0) {
    return `${open}<text class="nodata" x="${px(width / 2)}" y="${px(height / 2)}" text-anchor="middle" fill="${THEME.weak}" font-size="14">No data</text></svg>`;
  }
  const [lo0, hi0] = yDomain(values, options);
  const bottom = 22;
  const top = 8;
  const plotHeight = Math.max(10, height - top - bottom);
  const yStep = niceStep(hi0 - lo0, Math.max(2, Math.floor(plotHeight / 36)));
  const lo = options.min ?? Math.floor(lo0 / yStep) * yStep;
  const hi = options.max ?? Math.ceil(hi0 / yStep) * yStep;
  const yTicks: number[] = [];
  for (let v = Math.ceil(lo / yStep) * yStep; v <= hi + yStep * 1e-9; v += yStep)
    yTicks.push(Number(v.toPrecision(12)));
  const tickLabels = yTicks.map((v) => formatValue(v, options.unit, options.decimals));
  const left = Math.max(...tickLabels.map((l) => l.length)) * 6.6 + 14;
  const right = 10;
  const plotWidth = Math.max(10, width - left - right);
  const x = (t: number) => left + ((t - start) / Math.max(1, end - start)) * plotWidth;
  const y = (v: number) => top + plotHeight - ((v - lo) / Math.max(Number.MIN_VALUE, hi - lo)) * plotHeight;

  const parts: string[] = [open];
  yTicks.forEach((v, i) => {
    parts.push(
      `<line x1="${px(left)}" x2="${px(left + plotWidth)}" y1="${px(y(v))}" y2="${px(y(v))}" stroke="${THEME.grid}" stroke-width="1"/>`,
      `<text x="${px(left - 6)}" y="${px(y(v) + 4)}" text-anchor="end" fill="${THEME.weak}" font-size="11">${escapeHtml(tickLabels[i]!)}</text>`,
    );
  });
  const span = end - start;
  const interval =
    X_INTERVALS.find((s) => span / s <= Math.max(2, plotWidth / 95)) ?? X_INTERVALS[X_INTERVALS.length - 1]!;
  for (let t = Math.ceil(start / interval) * interval; t <= end; t += interval) {
    parts.push(
      `<line x1="${px(x(t))}" x2="${px(x(t))}" y1="${px(top)}" y2="${px(top + plotHeight)}" stroke="${THEME.grid}" stroke-width="1"/>`,
      `<text x="${px(x(t))}" y="${px(height - 6)}" text-anchor="middle" fill="${THEME.weak}" font-size="11">${xTickLabel(t, interval, span)}</text>`,
    );
  }
  series.forEach((s, i) => {
    const color = seriesColor(i);
    const name = escapeHtml(s.name);
    for (const segment of segments(s.points, options.stepSeconds)) {
      if (segment.length === 1) {
        const [p] = segment;
        parts.push(
          `<circle class="point" cx="${px(x(p!.time))}" cy="${px(y(p!.value))}" r="2.5" fill="${color}"><title>${name}</title></circle>`,
        );
        continue;
      }
      const coords = segment.map((p) => `${px(x(p.time))},${px(y(p.value))}`).join(' ');
      parts.push(
        `<polyline class="series" points="${coords}" fill="none" stroke="${color}" stroke-width="1.5" stroke-linejoin="round"><title>${name}</title></polyline>`,
      );
    }
  });
  parts.push('</svg>');
  return parts.join('');
}
