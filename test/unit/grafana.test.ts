import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.ts';

/**
 * The committed dashboards (grafana/dashboards/*.json) and alert rules (grafana/alerts.rules.yml)
 * only name metrics the daemon exports: every metric in every PromQL expression is in the
 * registry of createMetrics() (with prom-client's default metrics, and the _bucket, _sum and
 * _count series of histograms and summaries). A renamed metric fails here, not on a blank panel.
 */
const GRAFANA = join(import.meta.dirname, '../../grafana');
const DASHBOARDS = join(GRAFANA, 'dashboards');

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

/** The metric names an expression reads (identifiers that are not functions, keywords or labels). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""') // string literals
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges and subqueries
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' '); // label lists
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const name = m[1]!;
    if (!m[2] && !KEYWORDS.has(name.toLowerCase())) names.add(name);
  }
  return [...names];
}

async function exportedNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const m of await createMetrics().registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m.name + s);
    if (String(m.type) === 'summary') for (const s of ['_sum', '_count']) names.add(m.name + s);
  }
  return names;
}

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Array<{ expr: string; refId: string }>;
  panels?: Panel[];
}

const files = readdirSync(DASHBOARDS).filter((f) => f.endsWith('.json'));
const dashboards = files.map((f) => ({
  file: f,
  json: JSON.parse(readFileSync(join(DASHBOARDS, f), 'utf8')) as {
    uid: string;
    title: string;
    schemaVersion: number;
    panels: Panel[];
  },
}));
const panelsOf = (ps: Panel[]): Panel[] => ps.flatMap((p) => [p, ...panelsOf(p.panels ?? [])]);

/** The `expr:` values of a rules file (one line, or a `|` block). */
function ruleExpressions(yaml: string): string[] {
  const lines = yaml.split('\n');
  const exprs: string[] = [];
  lines.forEach((line, i) => {
    const m = /^(\s*)expr:\s*(.*)$/.exec(line);
    if (!m) return;
    if (!/^[|>]/.test(m[2]!)) {
      exprs.push(m[2]!);
      return;
    }
    const block: string[] = [];
    for (const next of lines.slice(i + 1)) {
      if (next.trim() !== '' && next.search(/\S/) <= m[1]!.length) break;
      block.push(next.trim());
    }
    exprs.push(block.join(' '));
  });
  return exprs;
}

describe('grafana dashboards', () => {
  it('behavior: metricNames reads metrics, not functions, keywords, labels or strings', () => {
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (le, queue) (rate(stablebooks_job_duration_seconds_bucket{queue=~"a|b"}[5m]))) / on (queue) group_left x_total offset 1h or vector(0) * 1e6',
      ).sort(),
    ).toEqual(['stablebooks_job_duration_seconds_bucket', 'x_total']);
  });

  it('invariant: the six dashboards exist, parse and have unique uids and panel ids', () => {
    expect(files.sort()).toEqual(
      ['api', 'chain', 'overview', 'payments', 'payouts', 'queues'].map((n) => `${n}.json`),
    );
    expect(new Set(dashboards.map((d) => d.json.uid)).size).toBe(dashboards.length);
    for (const { file, json } of dashboards) {
      expect(json.schemaVersion, file).toBeGreaterThanOrEqual(39);
      const panels = panelsOf(json.panels);
      expect(panels.length, file).toBeGreaterThan(0);
      expect(new Set(panels.map((p) => p.id)).size, file).toBe(panels.length);
      for (const p of panels.filter((p) => p.type !== 'row')) {
        // The uid of grafana/provisioning/datasources/prometheus.yml.
        expect(p.datasource?.uid, `${file}: ${p.title}`).toBe('prometheus');
        expect(p.targets?.length, `${file}: ${p.title}`).toBeGreaterThan(0);
      }
    }
    expect(readFileSync(join(GRAFANA, 'provisioning/datasources/prometheus.yml'), 'utf8')).toMatch(
      /uid: prometheus\n/,
    );
  });

  it('invariant: every metric in a dashboard expression is exported by the daemon', async () => {
    const exported = await exportedNames();
    const unknown: string[] = [];
    let checked = 0;
    for (const { file, json } of dashboards)
      for (const p of panelsOf(json.panels))
        for (const t of p.targets ?? [])
          for (const name of metricNames(t.expr)) {
            checked++;
            if (!exported.has(name)) unknown.push(`${file} "${p.title}": ${name}`);
          }
    expect(unknown).toEqual([]);
    expect(checked).toBeGreaterThan(40);
  });

  it('invariant: every metric in an alert rule is exported by the daemon', async () => {
    // `up` is Prometheus' own series of each scrape (StablebooksDown), not the daemon's.
    const exported = new Set([...(await exportedNames()), 'up']);
    const exprs = ruleExpressions(readFileSync(join(GRAFANA, 'alerts.rules.yml'), 'utf8'));
    expect(exprs.length).toBeGreaterThanOrEqual(14);
    const unknown = exprs.flatMap((e) => metricNames(e).filter((n) => !exported.has(n)));
    expect(unknown).toEqual([]);
  });
});
