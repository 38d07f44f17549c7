/**
 * A Grafana dashboard as one self-contained HTML page, drawn from query results we fetched
 * ourselves (Grafana is not needed to look at the project's dashboards: docs/decisions.md).
 *
 * The page follows Grafana's layout (the 24-column grid of `gridPos`, rows of 30 px, 8 px gaps,
 * the dark theme) on a 1600 px wide page. `stat` panels show each series' value in the panel's
 * unit, coloured by its thresholds; `timeseries` panels draw inline SVG lines with a legend from
 * `legendFormat`; any other panel is a titled box saying it is not drawn here. A panel whose
 * query failed shows Prometheus's error, never a blank.
 *
 * Nothing is loaded at view time: inline CSS, inline SVG, no script, no font, no image, and a
 * Content-Security-Policy that forbids every load. Every text from the dashboard or from
 * Prometheus (titles, labels, errors) is HTML-escaped.
 */

import { escapeHtml } from '../html/escapeHtml.ts';
import { DEFAULT_THRESHOLDS, THEME, thresholdColor } from './colors.ts';
import type { DashboardResults, TargetResult } from './dashboardResults.ts';
import { type Dashboard, dashboardPanels, type Panel } from './dashboardSchema.ts';
import { formatValue } from './formatValue.ts';
import { type ChartSeries, renderTimeseriesSvg, seriesColor } from './renderTimeseries.ts';
import { dashboardVariables, interpolate, type VariableValue } from './templateVariables.ts';

export const CSP = "default-src 'none'; style-src 'unsafe-inline'";

/** Grafana's grid, on a page of this width. */
export const PAGE_WIDTH = 1600;
const PAGE_PADDING = 16;
const GAP = 8;
const ROW_HEIGHT = 30;
const COLUMN_WIDTH = (PAGE_WIDTH - 2 * PAGE_PADDING - 23 * GAP) / 24;
const HEADER_HEIGHT = 32;
const BODY_PADDING = 8;

export interface RenderOptions {
  /** When the page was made (default: the end of the window, so the function stays pure). */
  generatedAt?: Date;
}

interface Size {
  width: number;
  height: number;
}

function panelSize(panel: Panel): Size {
  const { w, h } = panel.gridPos;
  return { width: w * COLUMN_WIDTH + (w - 1) * GAP, height: h * ROW_HEIGHT + (h - 1) * GAP };
}

function bodySize(panel: Panel): Size {
  const size = panelSize(panel);
  return {
    width: Math.floor(size.width - 2 * BODY_PADDING),
    height: Math.floor(size.height - HEADER_HEIGHT - BODY_PADDING),
  };
}

/** `{{label}}` in a legend format replaced by the series' label; Grafana's name without one. */
export function seriesName(
  metric: Record<string, string>,
  legendFormat: string | undefined,
  expr: string,
): string {
  if (legendFormat && legendFormat !== '__auto') {
    return legendFormat.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_, label: string) => metric[label] ?? '');
  }
  const { __name__: name, ...rest } = metric;
  const labels = Object.entries(rest).map(([k, v]) => `${k}="${v}"`);
  if (!name && labels.length === 0) return expr;
  return `${name ?? ''}${labels.length > 0 ? `{${labels.join(', ')}}` : ''}`;
}

interface Named {
  name: string;
  value: number;
}

/** Reduces a range series to one number, by the stat panel's first calculation. */
function reduce(values: number[], calc: string): number {
  const finite = values.filter(Number.isFinite);
  switch (calc) {
    case 'last':
      return values.at(-1) ?? Number.NaN;
    case 'first':
      return values[0] ?? Number.NaN;
    case 'firstNotNull':
      return finite[0] ?? Number.NaN;
    case 'mean':
      return finite.length === 0 ? Number.NaN : finite.reduce((a, b) => a + b, 0) / finite.length;
    case 'sum':
      return finite.reduce((a, b) => a + b, 0);
    case 'max':
      return finite.length === 0 ? Number.NaN : Math.max(...finite);
    case 'min':
      return finite.length === 0 ? Number.NaN : Math.min(...finite);
    case 'count':
      return finite.length;
    default:
      return finite.at(-1) ?? Number.NaN;
  }
}

function legendOf(panel: Panel, refId: string): string | undefined {
  return panel.targets.find((t) => t.refId === refId)?.legendFormat;
}

function statValues(panel: Panel, results: TargetResult[], variables: Map<string, VariableValue>): Named[] {
  const calc = panel.options.reduceOptions?.calcs?.[0] ?? 'lastNotNull';
  const named: Named[] = [];
  for (const result of results) {
    const legend = legendOf(panel, result.refId);
    const name = (metric: Record<string, string>) =>
      interpolate(seriesName(metric, legend, result.expr), variables, 'text');
    if (result.kind === 'instant') {
      for (const s of result.samples) named.push({ name: name(s.metric), value: Number(s.value) });
    } else if (result.kind === 'range') {
      for (const s of result.series) {
        named.push({
          name: name(s.metric),
          value: reduce(
            s.points.map((p) => Number(p.value)),
            calc,
          ),
        });
      }
    }
  }
  return named.sort((a, b) => a.name.localeCompare(b.name));
}

function errorsHtml(results: TargetResult[]): string {
  return results
    .filter((r) => r.kind === 'error')
    .map(
      (r) =>
        `<div class="error" role="alert"><strong>Query ${escapeHtml(r.refId)} failed:</strong> ${escapeHtml(
          r.error,
        )}<code>${escapeHtml(r.expr)}</code></div>`,
    )
    .join('');
}

function noData(results: TargetResult[]): string {
  const errors = errorsHtml(results);
  return errors || '<div class="nodata">No data</div>';
}

function renderStat(panel: Panel, results: TargetResult[], variables: Map<string, VariableValue>): string {
  const values = statValues(panel, results, variables);
  if (values.length === 0) return noData(results);
  const defaults = panel.fieldConfig.defaults;
  const steps = defaults.thresholds?.steps.length ? defaults.thresholds.steps : DEFAULT_THRESHOLDS;
  const colorMode = panel.options.colorMode ?? 'value';
  const textMode = panel.options.textMode ?? 'auto';
  const showName =
    textMode === 'value_and_name' || textMode === 'name' || (textMode === 'auto' && values.length > 1);
  const size = bodySize(panel);
  const errors = errorsHtml(results);
  const boxWidth = size.width / values.length;
  const boxes = values.map(({ name, value }) => {
    const text = formatValue(value, defaults.unit, defaults.decimals);
    const color = Number.isFinite(value) ? thresholdColor(steps, value) : THEME.text;
    const available = size.height * (showName ? 0.5 : 0.7) * (errors ? 0.5 : 1);
    const fontSize = Math.max(14, Math.min(available, (boxWidth - 16) / Math.max(2, text.length * 0.62), 64));
    const style =
      colorMode === 'background'
        ? `background:${color};color:#ffffff`
        : colorMode === 'value'
          ? `color:${color}`
          : `color:${THEME.text}`;
    const nameHtml = showName ? `<div class="stat-name">${escapeHtml(name)}</div>` : '';
    return `<div class="stat-value" style="${style}" data-value="${escapeHtml(String(value))}">${nameHtml}<div class="stat-number" style="font-size:${Math.round(fontSize)}px">${escapeHtml(text)}</div></div>`;
  });
  return `<div class="stat-values">${boxes.join('')}</div>${errors}`;
}

function legendRows(names: string[], width: number): number {
  let rows = 1;
  let used = 0;
  for (const name of names) {
    const item = name.length * 7 + 30;
    if (used > 0 && used + item > width) {
      rows += 1;
      used = 0;
    }
    used += item;
  }
  return rows;
}

function renderTimeseries(
  panel: Panel,
  results: TargetResult[],
  variables: Map<string, VariableValue>,
  window: DashboardResults['window'],
): string {
  const series: ChartSeries[] = [];
  for (const result of results) {
    const legend = legendOf(panel, result.refId);
    const name = (metric: Record<string, string>) =>
      interpolate(seriesName(metric, legend, result.expr), variables, 'text');
    if (result.kind === 'range') {
      for (const s of result.series) {
        series.push({
          name: name(s.metric),
          points: s.points.map((p) => ({ time: p.time, value: Number(p.value) })),
        });
      }
    } else if (result.kind === 'instant') {
      for (const s of result.samples) {
        series.push({ name: name(s.metric), points: [{ time: s.time, value: Number(s.value) }] });
      }
    }
  }
  series.sort((a, b) => a.name.localeCompare(b.name));
  const size = bodySize(panel);
  const errors = errorsHtml(results);
  const errorHeight = errors ? Math.min(size.height / 2, 60) : 0;
  const legendOptions = panel.options.legend;
  const showLegend =
    series.length > 0 && legendOptions?.showLegend !== false && legendOptions?.displayMode !== 'hidden';
  const rows = showLegend
    ? Math.min(
        legendRows(
          series.map((s) => s.name),
          size.width,
        ),
        4,
      )
    : 0;
  const legendHeight = rows > 0 ? rows * 18 + 6 : 0;
  const defaults = panel.fieldConfig.defaults;
  const svg = renderTimeseriesSvg(series, {
    width: size.width,
    height: Math.max(40, Math.floor(size.height - legendHeight - errorHeight)),
    start: window.start.getTime() / 1000,
    end: window.end.getTime() / 1000,
    stepSeconds: window.stepSeconds,
    ...(defaults.unit === undefined ? {} : { unit: defaults.unit }),
    ...(defaults.decimals === undefined ? {} : { decimals: defaults.decimals }),
    ...(defaults.min === undefined ? {} : { min: defaults.min }),
    ...(defaults.max === undefined ? {} : { max: defaults.max }),
  });
  const legend = showLegend
    ? `<ul class="legend" style="max-height:${legendHeight}px">${series
        .map(
          (s, i) =>
            `<li><span class="swatch" style="background:${seriesColor(i)}"></span>${escapeHtml(s.name)}</li>`,
        )
        .join('')}</ul>`
    : '';
  return `${errors}${svg}${legend}`;
}

function renderPanel(
  key: string,
  panel: Panel,
  results: DashboardResults,
  variables: Map<string, VariableValue>,
): string {
  const { x, y, w, h } = panel.gridPos;
  const place = `grid-column:${x + 1} / span ${w};grid-row:${y + 1} / span ${h}`;
  const title = interpolate(panel.title, variables, 'text');
  if (panel.type === 'row') {
    return `<section class="row" style="${place}" data-title="${escapeHtml(title)}"><h2>${escapeHtml(title)}</h2></section>`;
  }
  const panelResults = results.panels[key] ?? [];
  let body: string;
  switch (panel.type) {
    case 'stat':
      body = renderStat(panel, panelResults, variables);
      break;
    case 'timeseries':
      body = renderTimeseries(panel, panelResults, variables, results.window);
      break;
    default:
      body = `<div class="note">Panel type “${escapeHtml(panel.type)}” is not drawn by this renderer (only stat and timeseries are); open the dashboard in Grafana to see it.</div>`;
  }
  const description = panel.description ? ` title="${escapeHtml(panel.description)}"` : '';
  return `<section class="panel panel-${escapeHtml(panel.type)}" style="${place}" data-panel="${escapeHtml(key)}" data-title="${escapeHtml(title)}"${description}><header><h2>${escapeHtml(title)}</h2></header><div class="body">${body}</div></section>`;
}

function utc(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function windowText(window: DashboardResults['window']): string {
  const minutes = Math.round((window.end.getTime() - window.start.getTime()) / 60_000);
  const span = minutes % 60 === 0 && minutes >= 60 ? `${minutes / 60} h` : `${minutes} min`;
  return `${utc(window.start)} to ${utc(window.end)} (${span})`;
}

const STYLE = `
*{box-sizing:border-box}
html,body{margin:0;background:${THEME.page};color:${THEME.text};font-family:Inter,"Helvetica Neue",Arial,sans-serif;font-size:13px}
body{width:${PAGE_WIDTH}px}
.top{padding:${PAGE_PADDING}px ${PAGE_PADDING}px 0}
.top h1{font-size:20px;font-weight:500;margin:0 0 4px}
.top p{margin:0;color:${THEME.weak};font-size:12px}
.grid{display:grid;padding:${PAGE_PADDING}px;grid-template-columns:repeat(24,minmax(0,1fr));grid-auto-rows:${ROW_HEIGHT}px;gap:${GAP}px}
.panel{background:${THEME.panel};border:1px solid ${THEME.border};border-radius:2px;display:flex;flex-direction:column;overflow:hidden;min-width:0}
.panel header{height:${HEADER_HEIGHT}px;flex:none;padding:0 ${BODY_PADDING}px;display:flex;align-items:center}
.panel h2{font-size:14px;font-weight:500;margin:0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.panel .body{flex:1;min-height:0;padding:0 ${BODY_PADDING}px ${BODY_PADDING}px;display:flex;flex-direction:column;overflow:hidden}
.row h2{font-size:16px;font-weight:500;margin:6px 0}
.stat-values{flex:1;display:flex;gap:4px;min-height:0}
.stat-value{flex:1;min-width:0;display:flex;flex-direction:column;align-items:center;justify-content:center;border-radius:2px;overflow:hidden}
.stat-name{font-size:13px;opacity:.9;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;max-width:100%;padding:0 4px}
.stat-number{font-weight:500;line-height:1.1;white-space:nowrap}
.nodata{flex:1;display:flex;align-items:center;justify-content:center;color:${THEME.weak};font-size:16px}
.error{color:${THEME.error};font-size:12px;padding:4px 0;overflow:hidden;word-break:break-word}
.error code{display:block;color:${THEME.weak};font-size:11px;margin-top:2px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.note{flex:1;display:flex;align-items:center;justify-content:center;text-align:center;color:${THEME.weak};padding:8px}
.chart{display:block;flex:none}
.legend{list-style:none;margin:4px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:0 14px;overflow:hidden;flex:none}
.legend li{display:flex;align-items:center;gap:6px;height:18px;font-size:12px;white-space:nowrap}
.swatch{display:inline-block;width:14px;height:4px;border-radius:2px}
`;

/** The whole page. */
export function renderDashboard(
  dashboard: Dashboard,
  results: DashboardResults,
  options: RenderOptions = {},
): string {
  const variables = dashboardVariables(dashboard);
  const generatedAt = options.generatedAt ?? results.window.end;
  const panels = dashboardPanels(dashboard)
    .map(({ key, panel }) => renderPanel(key, panel, results, variables))
    .join('\n');
  const variableText = [...variables.entries()].map(([name, v]) => `${name}: ${v.text}`).join(', ');
  const source = results.source ? ` from Prometheus at ${results.source}` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="color-scheme" content="dark">
<title>${escapeHtml(dashboard.title)}</title>
<style>${STYLE}</style>
</head>
<body>
<div class="top">
<h1>${escapeHtml(dashboard.title)}</h1>
<p>${escapeHtml(windowText(results.window))}${variableText ? ` · ${escapeHtml(variableText)}` : ''} · drawn${escapeHtml(source)} by stablebooks' dashboard renderer at ${escapeHtml(utc(generatedAt))}</p>
</div>
<main class="grid">
${panels}
</main>
</body>
</html>
`;
}
