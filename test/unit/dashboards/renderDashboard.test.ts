import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { DashboardResults, TargetResult } from '../../../src/dashboards/dashboardResults.ts';
import { dashboardPanels, parseDashboard } from '../../../src/dashboards/dashboardSchema.ts';
import { CSP, renderDashboard } from '../../../src/dashboards/renderDashboard.ts';

/**
 * The renderer on the project's real Overview dashboard with hand-written query results: every
 * panel is drawn with its title, stat values carry their unit and threshold colour, time series
 * are polylines, a failed query shows its error, and the page can load nothing.
 */
const overview = parseDashboard(
  JSON.parse(readFileSync(new URL('../../../grafana/dashboards/overview.json', import.meta.url), 'utf8')),
);
const end = new Date('2026-05-01T12:00:00Z');
const start = new Date(end.getTime() - 30 * 60_000);
const t0 = start.getTime() / 1000;

function instant(value: string, metric: Record<string, string> = {}): TargetResult {
  return { refId: 'A', expr: 'x', kind: 'instant', samples: [{ metric, time: end.getTime() / 1000, value }] };
}

function range(series: Array<{ metric: Record<string, string>; values: number[] }>): TargetResult {
  return {
    refId: 'A',
    expr: 'x',
    kind: 'range',
    series: series.map((s) => ({
      metric: s.metric,
      points: s.values.map((v, i) => ({ time: t0 + i * 60, value: String(v) })),
    })),
  };
}

const byTitle = new Map(dashboardPanels(overview).map(({ key, panel }) => [panel.title, key]));
function key(title: string): string {
  const found = byTitle.get(title);
  if (!found) throw new Error(`no panel ${title} in overview.json`);
  return found;
}

const results: DashboardResults = {
  window: { start, end, stepSeconds: 60 },
  panels: {
    [key('Balance proofs failing')]: [instant('0')],
    [key('Ledger imbalance')]: [instant('1')],
    [key('Critical findings open')]: [instant('0')],
    [key('Chain lag (blocks)')]: [instant('25', { chain_id: '11155111' })],
    [key('Money in, last 24h (sales)')]: [
      {
        refId: 'A',
        expr: 'x',
        kind: 'instant',
        samples: [
          { metric: { chain_id: '11155111', token: 'USDT' }, time: 0, value: '25' },
          { metric: { chain_id: '11155111', token: 'USDC' }, time: 0, value: '12.5' },
        ],
      },
    ],
    [key('Service fees, last 24h')]: [],
    [key('Findings open by severity')]: [
      range([
        { metric: { severity: 'critical' }, values: [0, 1, 1, 2] },
        { metric: { severity: 'warning' }, values: [3, 3, 4, 5] },
      ]),
    ],
    [key('Balance proofs')]: [
      range([{ metric: { role: 'merchant', token: 'USDT', chain_id: '11155111' }, values: [1, 1, 0, 1] }]),
    ],
    [key('Wallet balances (ledger)')]: [
      range([
        {
          metric: { account: 'assets:wallet', token: '<script>alert(1)</script>', chain_id: '1' },
          values: [5, 6],
        },
      ]),
    ],
    [key('Last reconciliation run (age)')]: [instant('7200')],
    [key('Last reconciliation proved the books')]: [
      {
        refId: 'A',
        expr: 'min(broken',
        kind: 'error',
        error: 'bad_data: parse error: unclosed left parenthesis',
      },
    ],
  },
};

const html = renderDashboard(overview, results);

/** The markup of one panel, by its title. */
function panelHtml(title: string): string {
  const sections = html.split('<section ').slice(1);
  const found = sections.find((s) => s.includes(`data-title="${title.replaceAll('"', '&quot;')}"`));
  if (!found) throw new Error(`panel ${title} not rendered`);
  return found;
}

describe('renderDashboard: the Overview dashboard', () => {
  it('behavior: every panel is drawn at its grid place with its title', () => {
    for (const { panel } of dashboardPanels(overview)) {
      const section = panelHtml(panel.title);
      expect(section).toContain(`<h2>${panel.title}</h2>`);
      const { x, y, w, h } = panel.gridPos;
      expect(section).toContain(`grid-column:${x + 1} / span ${w};grid-row:${y + 1} / span ${h}`);
    }
    expect(html).toContain('<h1>stablebooks / Overview</h1>');
  });

  it('behavior: stat values are coloured by their thresholds', () => {
    expect(panelHtml('Balance proofs failing')).toMatch(
      /background:#73bf69;color:#ffffff" data-value="0">.*>0</,
    );
    expect(panelHtml('Ledger imbalance')).toMatch(/background:#f2495c;color:#ffffff" data-value="1">.*>1</);
    // 25 blocks: above the orange step (20), below red (50).
    expect(panelHtml('Chain lag (blocks)')).toMatch(/background:#ff9830;.*>25</);
  });

  it('behavior: stat panels write units, decimals and one value per series with its legend', () => {
    const money = panelHtml('Money in, last 24h (sales)');
    expect(money).toContain('USDC on 11155111');
    expect(money).toContain('USDT on 11155111');
    expect(money).toContain('>12.50<');
    expect(money).toContain('>25.00<');
    expect(panelHtml('Last reconciliation run (age)')).toContain('>2 hour<');
  });

  it('behavior: a panel without data says so, a failed query shows its error', () => {
    expect(panelHtml('Service fees, last 24h')).toContain('No data');
    const failed = panelHtml('Last reconciliation proved the books');
    expect(failed).toContain('role="alert"');
    expect(failed).toContain('bad_data: parse error: unclosed left parenthesis');
    expect(failed).toContain('min(broken');
    expect(failed).not.toContain('No data');
  });

  it('behavior: time series are polylines with one point per sample and a legend', () => {
    const findings = panelHtml('Findings open by severity');
    const lines = [...findings.matchAll(/<polyline class="series" points="([^"]+)"/g)].map((m) => m[1]!);
    expect(lines).toHaveLength(2);
    for (const points of lines) {
      const pairs = points.split(' ');
      expect(pairs).toHaveLength(4);
      for (const pair of pairs) expect(pair).toMatch(/^\d+(\.\d)?,\d+(\.\d)?$/);
    }
    expect(findings).toMatch(/<li><span class="swatch"[^>]*><\/span>critical<\/li>/);
    expect(findings).toMatch(/<li><span class="swatch"[^>]*><\/span>warning<\/li>/);
    expect(panelHtml('Balance proofs')).toContain('merchant USDT on 11155111');
    expect(panelHtml('Ledger entries per hour by kind')).toContain('No data');
  });

  it('security: labels are escaped, the page forbids every load and names no URL', () => {
    expect(html).not.toContain('<script');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="${CSP}">`);
    expect(CSP).toContain("default-src 'none'");
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/\b(src|href)=|url\(|@import|<link|<img|<iframe/i);
  });

  it('behavior: a panel type we do not draw is a titled box with a note', () => {
    const dashboard = parseDashboard({
      title: 'd',
      panels: [{ id: 1, type: 'piechart', title: 'Share', gridPos: { x: 0, y: 0, w: 8, h: 6 } }],
    });
    const page = renderDashboard(dashboard, { window: results.window, panels: {} });
    expect(page).toContain('<h2>Share</h2>');
    expect(page).toContain('Panel type “piechart” is not drawn by this renderer');
  });

  it('behavior: every committed dashboard parses and draws each panel, even with no data', () => {
    const dir = new URL('../../../grafana/dashboards/', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(6);
    for (const file of files) {
      const dashboard = parseDashboard(JSON.parse(readFileSync(new URL(file, dir), 'utf8')));
      const page = renderDashboard(dashboard, { window: results.window, panels: {} });
      for (const { panel } of dashboardPanels(dashboard)) {
        expect(page, `${file}: ${panel.title}`).toContain(`<h2>${panel.title.replaceAll('&', '&amp;')}</h2>`);
      }
    }
  });
});
