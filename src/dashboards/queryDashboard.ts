/**
 * Runs every query of a dashboard against Prometheus, as Grafana would for one screen: stat
 * panels and targets marked instant get an instant query at the end of the window, time series a
 * range query over it. Variables and $__interval, $__rate_interval, $__range are substituted
 * first. A query that fails becomes an `error` result carrying Prometheus's message, so the page
 * shows why a panel is empty; only an unreachable Prometheus fails the whole call.
 */
import type { DashboardResults, TargetResult } from './dashboardResults.ts';
import { type Dashboard, dashboardPanels, type Panel, type Target } from './dashboardSchema.ts';
import { type PrometheusClient, PrometheusQueryError, parsePromDuration } from './prometheusApi.ts';
import {
  dashboardVariables,
  type IntervalContext,
  interpolate,
  type VariableValue,
} from './templateVariables.ts';

export interface QueryDashboardOptions {
  prometheus: PrometheusClient;
  /** End of the window (default: now). */
  end?: Date;
  /** Length of the window (default: the dashboard's own time range, e.g. now-24h; else 6 h). */
  windowMinutes?: number;
  /** Prometheus's scrape interval (default: read from its configuration). */
  scrapeIntervalSeconds?: number;
  /** Samples per series of a range query at most (Grafana's "max data points"; default 300). */
  maxDataPoints?: number;
}

/** The dashboard's `time.from` ("now-24h") as minutes, if it is relative to now. */
export function dashboardWindowMinutes(dashboard: Dashboard): number | undefined {
  const match = /^now-(\w+)$/.exec(dashboard.time?.from ?? '');
  const seconds = match?.[1] ? parsePromDuration(match[1]) : undefined;
  return seconds === undefined || dashboard.time?.to !== 'now' ? undefined : seconds / 60;
}

function isPrometheusTarget(target: Target): boolean {
  const ds = target.datasource;
  if (ds === undefined || typeof ds === 'string') return true;
  return ds.type === undefined || ds.type === 'prometheus';
}

function message(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

async function runTarget(
  panel: Panel,
  target: Target,
  prometheus: PrometheusClient,
  variables: Map<string, VariableValue>,
  context: IntervalContext,
  window: DashboardResults['window'],
): Promise<TargetResult> {
  const refId = target.refId;
  if (!isPrometheusTarget(target) || target.expr === undefined || target.expr.trim() === '') {
    return { refId, expr: target.expr ?? '', kind: 'error', error: 'not a Prometheus query (no expr)' };
  }
  const expr = interpolate(target.expr, variables, 'promql', context);
  try {
    if (panel.type === 'stat' || target.instant === true) {
      return { refId, expr, kind: 'instant', samples: await prometheus.query(expr, window.end) };
    }
    return { refId, expr, kind: 'range', series: await prometheus.queryRange(expr, window) };
  } catch (err) {
    // Prometheus refused this query: the panel says why. Anything else (unreachable) is fatal.
    if (err instanceof PrometheusQueryError && err.details.status !== undefined) {
      return { refId, expr, kind: 'error', error: message(err) };
    }
    throw err;
  }
}

export async function queryDashboard(
  dashboard: Dashboard,
  options: QueryDashboardOptions,
): Promise<DashboardResults> {
  const { prometheus } = options;
  const end = options.end ?? new Date();
  const windowMinutes = options.windowMinutes ?? dashboardWindowMinutes(dashboard) ?? 360;
  if (!(windowMinutes > 0))
    throw new Error(`the window must be a positive number of minutes, not ${windowMinutes}`);
  const rangeSeconds = windowMinutes * 60;
  const scrapeIntervalSeconds = options.scrapeIntervalSeconds ?? (await prometheus.scrapeIntervalSeconds());
  const stepSeconds = Math.max(
    1,
    Math.ceil(scrapeIntervalSeconds),
    Math.ceil(rangeSeconds / (options.maxDataPoints ?? 300)),
  );
  const window = { start: new Date(end.getTime() - rangeSeconds * 1000), end, stepSeconds };
  const context: IntervalContext = { intervalSeconds: stepSeconds, scrapeIntervalSeconds, rangeSeconds };
  const variables = dashboardVariables(dashboard);
  const entries = await Promise.all(
    dashboardPanels(dashboard).map(async ({ key, panel }) => {
      // Only the panels the renderer draws are queried.
      const drawn = panel.type === 'stat' || panel.type === 'timeseries';
      const targets = drawn ? panel.targets.filter((t) => t.hide !== true) : [];
      const results = await Promise.all(
        targets.map((t) => runTarget(panel, t, prometheus, variables, context, window)),
      );
      return [key, results] as const;
    }),
  );
  return { window, source: prometheus.url, panels: Object.fromEntries(entries) };
}
