/**
 * What the renderer draws from: for each panel (by the key of `dashboardPanels`), the outcome of
 * each of its targets. `queryDashboard` fills it from Prometheus; a test can write it by hand.
 */
import type { InstantSample, RangeSeries } from './prometheusApi.ts';

interface TargetOutcome {
  refId: string;
  /** The PromQL sent, variables substituted (shown with an error). */
  expr: string;
}

export type TargetResult =
  | (TargetOutcome & { kind: 'instant'; samples: InstantSample[] })
  | (TargetOutcome & { kind: 'range'; series: RangeSeries[] })
  | (TargetOutcome & { kind: 'error'; error: string });

export interface DashboardResults {
  /** The time window the queries covered; instant queries ran at `end`. */
  window: { start: Date; end: Date; stepSeconds: number };
  /** Where the data came from, for the page's header. */
  source?: string;
  /** Panel key -> one result per target that ran. */
  panels: Record<string, TargetResult[]>;
}
