import { afterAll } from 'vitest';
import type { PrometheusAlert } from '../../src/dashboards/prometheusApi.ts';
import { startEphemeralPrometheus } from '../../src/devservices/prometheus.ts';

export type { PrometheusAlert } from '../../src/dashboards/prometheusApi.ts';
export { prometheusBinary, shortenForDurations } from '../../src/devservices/prometheus.ts';

/** One series of an instant query, as the API writes it: `value` is [unix seconds, text]. */
export interface PrometheusSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RunningPrometheus {
  url: string;
  /** The alerts pending or firing now. */
  alerts(): Promise<PrometheusAlert[]>;
  /** An instant PromQL query (vector results). */
  query(promql: string): Promise<PrometheusSample[]>;
  /** The last lines Prometheus printed, for failure messages. */
  output(): string;
}

/**
 * The real Prometheus server (src/devservices/prometheus.ts) scraping `targets` and evaluating
 * `rulesFile` every `intervalSeconds`, with each rule's `for:` replaced by `forDuration` when
 * given. Stopped, and its directory removed, after the file.
 */
export async function startPrometheus(options: {
  targets: string[];
  rulesFile: string;
  forDuration?: string;
  intervalSeconds?: number;
}): Promise<RunningPrometheus> {
  const prometheus = await startEphemeralPrometheus({
    targets: options.targets,
    ruleFiles: [options.rulesFile],
    scrapeIntervalSeconds: options.intervalSeconds ?? 1,
    ...(options.forDuration ? { forDuration: options.forDuration } : {}),
  });
  afterAll(() => prometheus.stop(), 30_000);
  return {
    url: prometheus.url,
    alerts: () => prometheus.alerts(),
    async query(promql) {
      const samples = await prometheus.query(promql);
      return samples.map((s) => ({ metric: s.metric, value: [s.time, s.value] }));
    },
    output: () => prometheus.output(),
  };
}
