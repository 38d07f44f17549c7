/**
 * A small client of Prometheus's HTTP API (`/api/v1/...`): the instant and range queries a
 * dashboard needs, the alerts list tests read, and the scrape interval of the server's own
 * configuration. Every response is parsed by zod; a query Prometheus refuses becomes a
 * `PrometheusQueryError` carrying Prometheus's own message, which a dashboard panel then shows.
 *
 * Glossary: an instant query gives one sample per series (a vector), a range query gives every
 * sample of each series between start and end, one per step (a matrix). A scalar result (`time()`)
 * is returned as a vector of one series with no labels.
 */
import { z } from 'zod';

/** One series of an instant query: its labels and its value at the query time. */
export interface InstantSample {
  metric: Record<string, string>;
  /** Seconds since the epoch. */
  time: number;
  /** Prometheus's text: a number, or "NaN", "+Inf", "-Inf". */
  value: string;
}

/** One series of a range query: its labels and its samples, oldest first. */
export interface RangeSeries {
  metric: Record<string, string>;
  points: Array<{ time: number; value: string }>;
}

/** One alert as `GET /api/v1/alerts` lists it. */
export interface PrometheusAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

export interface RangeWindow {
  start: Date;
  end: Date;
  stepSeconds: number;
}

export interface PrometheusClient {
  url: string;
  /** An instant query, at `time` (default: now). */
  query(promql: string, time?: Date): Promise<InstantSample[]>;
  /** A range query over the window, one sample per step. */
  queryRange(promql: string, window: RangeWindow): Promise<RangeSeries[]>;
  /** The alerts pending or firing now. */
  alerts(): Promise<PrometheusAlert[]>;
  /** `global.scrape_interval` of the server's loaded configuration, in seconds. */
  scrapeIntervalSeconds(): Promise<number>;
}

/** Prometheus answered with an error (bad PromQL, timeout), or not at all. */
export class PrometheusQueryError extends Error {
  override name = 'PrometheusQueryError';
  constructor(
    message: string,
    readonly details: { path: string; status?: number; errorType?: string },
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const sampleValue = z.tuple([z.number(), z.string()]);
const labels = z.record(z.string(), z.string());

const envelope = z.object({
  status: z.enum(['success', 'error']),
  data: z.unknown().optional(),
  errorType: z.string().optional(),
  error: z.string().optional(),
});

const queryData = z.discriminatedUnion('resultType', [
  z.object({
    resultType: z.literal('vector'),
    result: z.array(z.object({ metric: labels, value: sampleValue })),
  }),
  z.object({ resultType: z.literal('scalar'), result: sampleValue }),
  z.object({ resultType: z.literal('string'), result: sampleValue }),
  z.object({
    resultType: z.literal('matrix'),
    result: z.array(z.object({ metric: labels, values: z.array(sampleValue) })),
  }),
]);

const alertsData = z.object({
  alerts: z.array(
    z.object({
      labels,
      annotations: labels,
      state: z.enum(['pending', 'firing']),
      activeAt: z.string(),
      value: z.string(),
    }),
  ),
});

const configData = z.object({ yaml: z.string() });

/** "1s", "15s", "1m", "1m30s" (Prometheus durations) in seconds; undefined if unreadable. */
export function parsePromDuration(text: string): number | undefined {
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
  const parts = [...text.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return undefined;
  return parts.reduce((sum, p) => sum + Number(p[1]) * (units[p[2]!] ?? 0), 0);
}

/** fetch's "fetch failed" with the reason under it (ECONNREFUSED, a timeout). */
function describeFetchError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause : undefined;
  const code = cause && 'code' in cause && typeof cause.code === 'string' ? cause.code : cause?.message;
  return code ? `${err.message} (${code})` : err.message;
}

export function createPrometheusClient(url: string, options: { timeoutMs?: number } = {}): PrometheusClient {
  const base = url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;

  async function api(path: string, params?: URLSearchParams): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        ...(params ? { method: 'POST', body: params } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new PrometheusQueryError(
        `Prometheus at ${base} did not answer ${path}: ${describeFetchError(err)}`,
        { path },
        { cause: err },
      );
    }
    const text = await res.text();
    let body: z.infer<typeof envelope>;
    try {
      body = envelope.parse(JSON.parse(text));
    } catch (err) {
      throw new PrometheusQueryError(
        `Prometheus at ${base} answered ${path} with HTTP ${res.status} and no API response: ${text.slice(0, 200)}`,
        { path, status: res.status },
        { cause: err },
      );
    }
    if (body.status !== 'success') {
      throw new PrometheusQueryError(`${body.errorType ?? 'error'}: ${body.error ?? `HTTP ${res.status}`}`, {
        path,
        status: res.status,
        ...(body.errorType ? { errorType: body.errorType } : {}),
      });
    }
    return body.data;
  }

  return {
    url: base,
    async query(promql, time) {
      const params = new URLSearchParams({ query: promql });
      if (time) params.set('time', String(time.getTime() / 1000));
      const data = queryData.parse(await api('/api/v1/query', params));
      switch (data.resultType) {
        case 'vector':
          return data.result.map((s) => ({ metric: s.metric, time: s.value[0], value: s.value[1] }));
        case 'scalar':
        case 'string':
          return [{ metric: {}, time: data.result[0], value: data.result[1] }];
        case 'matrix':
          // Only a range selector (`metric[5m]`) gives a matrix to an instant query: keep the last.
          return data.result.flatMap((s) => {
            const last = s.values.at(-1);
            return last ? [{ metric: s.metric, time: last[0], value: last[1] }] : [];
          });
      }
    },
    async queryRange(promql, window) {
      const params = new URLSearchParams({
        query: promql,
        start: String(window.start.getTime() / 1000),
        end: String(window.end.getTime() / 1000),
        step: String(window.stepSeconds),
      });
      const data = queryData.parse(await api('/api/v1/query_range', params));
      switch (data.resultType) {
        case 'matrix':
          return data.result.map((s) => ({
            metric: s.metric,
            points: s.values.map(([time, value]) => ({ time, value })),
          }));
        case 'vector':
          return data.result.map((s) => ({
            metric: s.metric,
            points: [{ time: s.value[0], value: s.value[1] }],
          }));
        case 'scalar':
        case 'string':
          return [{ metric: {}, points: [{ time: data.result[0], value: data.result[1] }] }];
      }
    },
    async alerts() {
      return alertsData.parse(await api('/api/v1/alerts')).alerts;
    },
    async scrapeIntervalSeconds() {
      const { yaml } = configData.parse(await api('/api/v1/status/config'));
      // The dumped configuration starts with the `global:` block, so the first match is global's.
      const match = /^\s+scrape_interval:\s*(\S+)\s*$/m.exec(yaml);
      const seconds = match?.[1] ? parsePromDuration(match[1]) : undefined;
      return seconds ?? 60; // Prometheus's own default
    },
  };
}
