import { describe, expect, it } from 'vitest';
import { parseDashboard } from '../../../src/dashboards/dashboardSchema.ts';
import { formatValue } from '../../../src/dashboards/formatValue.ts';
import {
  type PrometheusClient,
  PrometheusQueryError,
  parsePromDuration,
} from '../../../src/dashboards/prometheusApi.ts';
import { queryDashboard } from '../../../src/dashboards/queryDashboard.ts';
import { interpolate, type VariableValue } from '../../../src/dashboards/templateVariables.ts';

/** A Prometheus that records the queries it is sent and refuses any containing "broken". */
function recordingPrometheus() {
  const sent: Array<{ kind: 'instant' | 'range'; promql: string; step?: number }> = [];
  const refuse = (promql: string) => {
    if (promql.includes('broken')) {
      throw new PrometheusQueryError('bad_data: parse error', { path: '/api/v1/query', status: 400 });
    }
  };
  const client: PrometheusClient = {
    url: 'http://prometheus.test',
    async query(promql, time) {
      sent.push({ kind: 'instant', promql });
      refuse(promql);
      return [{ metric: {}, time: (time?.getTime() ?? 0) / 1000, value: '1' }];
    },
    async queryRange(promql, window) {
      sent.push({ kind: 'range', promql, step: window.stepSeconds });
      refuse(promql);
      return [{ metric: { a: 'b' }, points: [{ time: window.start.getTime() / 1000, value: '2' }] }];
    },
    alerts: async () => [],
    scrapeIntervalSeconds: async () => 15,
  };
  return { client, sent };
}

const dashboard = parseDashboard({
  title: 'test',
  templating: {
    list: [
      { name: 'store', type: 'custom', current: { value: ['st_a', 'st.b'] }, multi: true },
      { name: 'queue', type: 'query', includeAll: true, current: { value: '$__all' }, allValue: '.+' },
    ],
  },
  panels: [
    {
      id: 1,
      type: 'stat',
      title: 'S',
      gridPos: { x: 0, y: 0, w: 6, h: 4 },
      targets: [{ refId: 'A', expr: 'sum(x{store=~"$store"})' }],
    },
    {
      id: 2,
      type: 'timeseries',
      title: 'T',
      gridPos: { x: 6, y: 0, w: 18, h: 8 },
      targets: [
        // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's ${name} syntax, not a template
        { refId: 'A', expr: 'rate(y{queue=~"${queue}"}[$__rate_interval])' },
        { refId: 'B', expr: 'broken(' },
        { refId: 'C', expr: 'hidden', hide: true },
      ],
    },
    { id: 3, type: 'text', title: 'N', gridPos: { x: 0, y: 8, w: 24, h: 2 }, targets: [{ expr: 'never' }] },
  ],
});

describe('queryDashboard', () => {
  it('behavior: instant queries for stats, range queries for time series, variables substituted', async () => {
    const { client, sent } = recordingPrometheus();
    const end = new Date('2026-05-01T12:00:00Z');
    const results = await queryDashboard(dashboard, { prometheus: client, end, windowMinutes: 60 });
    // One hour in 300 points at most: a step of 12 s, below the scrape interval, so 15 s.
    expect(results.window).toEqual({ start: new Date('2026-05-01T11:00:00Z'), end, stepSeconds: 15 });
    expect(sent).toEqual([
      { kind: 'instant', promql: 'sum(x{store=~"(st_a|st\\.b)"})' },
      { kind: 'range', promql: 'rate(y{queue=~".+"}[60s])', step: 15 },
      { kind: 'range', promql: 'broken(', step: 15 },
    ]);
    expect(results.panels['1']?.map((r) => r.kind)).toEqual(['instant']);
    expect(results.panels['2']?.map((r) => r.kind)).toEqual(['range', 'error']);
    expect(results.panels['2']?.[1]).toMatchObject({ kind: 'error', error: 'bad_data: parse error' });
    expect(results.panels['3']).toEqual([]);
  });

  it('behavior: the window defaults to the dashboard time range', async () => {
    const { client } = recordingPrometheus();
    const end = new Date('2026-05-01T12:00:00Z');
    const results = await queryDashboard(
      { ...dashboard, time: { from: 'now-24h', to: 'now' } },
      { prometheus: client, end },
    );
    expect(results.window.start).toEqual(new Date('2026-04-30T12:00:00Z'));
    expect(results.window.stepSeconds).toBe(288);
  });
});

describe('interpolate and formatValue', () => {
  const vars = new Map<string, VariableValue>([['chain', { promql: '(1|2)', text: '1, 2' }]]);
  const context = { intervalSeconds: 30, scrapeIntervalSeconds: 15, rangeSeconds: 3600 };

  it('behavior: every reference form and the built-in intervals', () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's ${name} syntax, not a template
    expect(interpolate('a{c=~"$chain"} ${chain} [[chain]] ${chain:regex}', vars, 'promql')).toBe(
      'a{c=~"(1|2)"} (1|2) (1|2) (1|2)',
    );
    expect(interpolate('Chains $chain', vars, 'text')).toBe('Chains 1, 2');
    expect(interpolate('[$__rate_interval] [$__interval] [$__range] $unknown', vars, 'promql', context)).toBe(
      '[60s] [30s] [3600s] $unknown',
    );
  });

  it('behavior: units as Grafana writes them', () => {
    expect(formatValue('7200', 's')).toBe('2 hour');
    expect(formatValue('0.25', 'percentunit')).toBe('25%');
    expect(formatValue('3', 'reqps')).toBe('3 req/s');
    expect(formatValue('12.5', undefined, 2)).toBe('12.50');
    expect(formatValue('0.123456')).toBe('0.123');
    expect(formatValue('NaN')).toBe('NaN');
    expect(parsePromDuration('1m30s')).toBe(90);
    expect(parsePromDuration('soon')).toBeUndefined();
  });
});
