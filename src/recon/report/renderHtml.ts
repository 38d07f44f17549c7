/**
 * The report as one self-contained HTML page: inline CSS, charts drawn here as inline SVG, no
 * script, font, image or stylesheet from anywhere else. A Content-Security-Policy meta tag forbids
 * every network load, so the page can be mailed or archived and opened offline, and provably
 * fetches nothing when it is.
 *
 * Everything taken from the report is HTML-escaped: finding details, reference ids and RPC errors
 * come from outside and may hold markup.
 *
 * Glossary: a chart has groups along the x axis (days, tokens, finding kinds) and, within each
 * group, one bar per series (tokens, age buckets).
 */

import type { FindingRow } from '../../findings/finding.ts';
import { escapeHtml } from '../../html/escapeHtml.ts';
import type { CheckResult, ReconReport } from './reportModel.ts';
import { confirmedTotalsByToken, sumDecimals, type TokenKey, tokenLabel } from './reportTotals.ts';

const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

// --- charts -------------------------------------------------------------------------------------

const PALETTE = ['#2563eb', '#d97706', '#059669', '#db2777', '#7c3aed', '#0891b2', '#65a30d', '#dc2626'];
const WIDTH = 760;
const HEIGHT = 260;
const PAD = { left: 78, right: 12, top: 14, bottom: 40 };
/** Beyond this many groups the x labels would overlap; only every n-th is written. */
const MAX_X_LABELS = 12;

interface Series {
  key: string;
  label: string;
}

interface Group {
  label: string;
  /** Series key → exact decimal string. A missing key is drawn as zero. */
  values: Map<string, string>;
}

interface Chart {
  id: string;
  title: string;
  /** What the numbers count, for the tooltip ("paid", "findings"). */
  measure: string;
  series: Series[];
  groups: Group[];
}

/**
 * Bar heights and axis ticks only: a double keeps ~15 significant digits, far finer than a pixel.
 * The text and the tooltips always show the exact decimal string, never this number.
 */
function toDrawingNumber(text: string): number {
  const value = Number(text);
  return Number.isFinite(value) ? value : 0;
}

const tickFormat = new Intl.NumberFormat('en-US', { maximumSignificantDigits: 6 });

function px(value: number): string {
  return value.toFixed(2);
}

function legend(series: Series[]): string {
  const keys = series.map(
    (s, i) =>
      `<span class="key"><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="${
        PALETTE[i % PALETTE.length]
      }"/></svg> ${escapeHtml(s.label)}</span>`,
  );
  return `<div class="legend">${keys.join('')}</div>`;
}

function barChart(chart: Chart): string {
  const head = `<figure><figcaption>${escapeHtml(chart.title)}</figcaption>`;
  const open = `<svg id="${chart.id}" class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${escapeHtml(chart.title)}">`;
  if (chart.groups.length === 0 || chart.series.length === 0) {
    return `${head}${open}<text class="nodata" x="${WIDTH / 2}" y="${HEIGHT / 2}" text-anchor="middle">no data</text></svg></figure>`;
  }

  const numbers = chart.groups.flatMap((g) =>
    chart.series.map((s) => toDrawingNumber(g.values.get(s.key) ?? '0')),
  );
  const max = Math.max(0, ...numbers);
  const min = Math.min(0, ...numbers);
  // All zero: any span draws zero-height bars; 1 avoids dividing by zero (NaN coordinates).
  const span = max - min || 1;
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const y = (value: number) => PAD.top + ((max - value) / span) * plotHeight;
  const groupWidth = plotWidth / chart.groups.length;
  const barWidth = (groupWidth * 0.8) / chart.series.length;
  const labelEvery = Math.ceil(chart.groups.length / MAX_X_LABELS);

  const parts: string[] = [];
  const ticks = [max, 0, ...(min < 0 ? [min] : [])].filter((v, i, all) => all.indexOf(v) === i);
  for (const tick of ticks) {
    parts.push(
      `<line class="grid" x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${px(y(tick))}" y2="${px(y(tick))}"/>`,
      `<text class="tick" x="${PAD.left - 6}" y="${px(y(tick) + 4)}" text-anchor="end">${escapeHtml(tickFormat.format(tick))}</text>`,
    );
  }
  chart.groups.forEach((group, g) => {
    const groupX = PAD.left + g * groupWidth;
    chart.series.forEach((series, s) => {
      const exact = group.values.get(series.key) ?? '0';
      const value = toDrawingNumber(exact);
      const top = Math.min(y(value), y(0));
      const tooltip = `${group.label} · ${series.label} · ${chart.measure}: ${exact}`;
      parts.push(
        `<rect class="bar" x="${px(groupX + groupWidth * 0.1 + s * barWidth)}" y="${px(top)}" width="${px(
          Math.max(barWidth - 1, 1),
        )}" height="${px(Math.abs(y(value) - y(0)))}" fill="${PALETTE[s % PALETTE.length]}"><title>${escapeHtml(
          tooltip,
        )}</title></rect>`,
      );
    });
    if (g % labelEvery === 0) {
      parts.push(
        `<text class="xlabel" x="${px(groupX + groupWidth / 2)}" y="${HEIGHT - PAD.bottom + 16}" text-anchor="middle">${escapeHtml(
          group.label,
        )}</text>`,
      );
    }
  });
  return `${head}${open}${parts.join('')}</svg>${legend(chart.series)}</figure>`;
}

function tokenKey(token: TokenKey): string {
  return `${token.chainId}:${token.symbol}`;
}

function tokenSeries(tokens: TokenKey[]): Series[] {
  const unique = new Map(tokens.map((t) => [tokenKey(t), t]));
  return [...unique.values()]
    .sort((a, b) => a.chainId - b.chainId || a.symbol.localeCompare(b.symbol))
    .map((t) => ({ key: tokenKey(t), label: tokenLabel(t) }));
}

/** Per UTC day and token, one measure of payments.perDay. */
function perDayChart(report: ReconReport, id: string, title: string, measure: 'paid' | 'fees'): Chart {
  const rows = report.payments.perDay;
  const days = [...new Set(rows.map((r) => r.day))].sort();
  return {
    id,
    title,
    measure,
    series: tokenSeries(rows),
    groups: days.map((day) => {
      const values = new Map<string, string>();
      for (const row of rows.filter((r) => r.day === day)) {
        const key = tokenKey(row);
        values.set(key, sumDecimals([...(values.has(key) ? [values.get(key)!] : []), row[measure]]));
      }
      return { label: day, values };
    }),
  };
}

function netChart(report: ReconReport): Chart {
  const totals = confirmedTotalsByToken(report);
  return {
    id: 'chart-net',
    title: 'Net of confirmed payments by token (paid − fees)',
    measure: 'net',
    series: [{ key: 'net', label: 'net' }],
    groups: totals.map((t) => ({ label: tokenLabel(t), values: new Map([['net', t.net]]) })),
  };
}

const AGE_BUCKETS = [
  { key: 'lt1h', label: '< 1 h' },
  { key: 'h1to1d', label: '1 h – 1 d' },
  { key: 'd1to7d', label: '1 – 7 d' },
  { key: 'gt7d', label: '> 7 d' },
] as const;

/** Unresolved findings (new and open lists) per kind, by age at generatedAt (counted by the database). */
function findingsChart(report: ReconReport): Chart {
  return {
    id: 'chart-findings',
    title: 'Unresolved findings by kind and age',
    measure: 'findings',
    series: AGE_BUCKETS.map(({ key, label }) => ({ key, label })),
    groups: report.findings.unresolvedByAge.map((row) => ({
      label: row.kind,
      values: new Map(AGE_BUCKETS.map((b) => [b.key, String(row[b.key])])),
    })),
  };
}

// --- tables -------------------------------------------------------------------------------------

type Cell = string | number | null | { text: string; cls: string };

function td(cell: Cell, numeric: boolean): string {
  if (cell === null) return `<td class="null">—</td>`;
  if (typeof cell === 'object') return `<td class="${cell.cls}">${escapeHtml(cell.text)}</td>`;
  return `<td${numeric ? ' class="num"' : ''}>${escapeHtml(String(cell))}</td>`;
}

function table(title: string, header: string[], rows: Cell[][], numeric: number[] = []): string {
  const body =
    rows.length === 0
      ? `<tr><td class="empty" colspan="${header.length}">none</td></tr>`
      : rows.map((r) => `<tr>${r.map((c, i) => td(c, numeric.includes(i))).join('')}</tr>`).join('\n');
  const head = header.map((h, i) => `<th${numeric.includes(i) ? ' class="num"' : ''}>${escapeHtml(h)}</th>`);
  return `<section><h2>${escapeHtml(title)}</h2><table><thead><tr>${head.join('')}</tr></thead><tbody>
${body}
</tbody></table></section>`;
}

function status(value: string): Cell {
  return { text: value.toUpperCase(), cls: `status ${value === 'pass' ? 'ok' : 'bad'}` };
}

function findingsTable(title: string, rows: FindingRow[], total: number, report: ReconReport): string {
  const { samplePerKind, fullList } = report.findings;
  const where = fullList === null ? 'stablebooks findings list' : fullList;
  return table(
    rows.length < total
      ? `${title}: the first ${samplePerKind} of each kind, ${rows.length} of ${total} (every one: ${where})`
      : title,
    ['id', 'kind', 'severity', 'store', 'ref', 'first seen', 'last seen', 'resolved', 'acked', 'details'],
    rows.map((f) => [
      f.id,
      f.kind,
      { text: f.severity, cls: `sev-${f.severity === 'critical' ? 'critical' : 'other'}` },
      f.storeId,
      `${f.refType} ${f.refId}`,
      f.firstSeenAt,
      f.lastSeenAt,
      f.resolvedAt,
      f.ackedAt === null ? null : `${f.ackedAt}${f.ackNote === null ? '' : ` (${f.ackNote})`}`,
      { text: JSON.stringify(f.details), cls: 'details' },
    ]),
  );
}

function differencesTable(title: string, rows: ReconReport['payments']['underpaid']): string {
  return table(
    title,
    ['intent', 'store', 'chain', 'token', 'requested', 'paid', 'difference', 'confirmed at'],
    rows.map((r) => [
      r.intentId,
      r.storeId,
      r.chainId,
      r.symbol,
      r.requested,
      r.paid,
      r.difference,
      r.confirmedAt,
    ]),
    [4, 5, 6],
  );
}

// --- page ---------------------------------------------------------------------------------------

function banner(report: ReconReport): string {
  const failedChecks = report.checks.filter((c: CheckResult) => c.status !== 'pass');
  const failedProofs = report.balanceProofs.filter((p) => p.result !== 'pass');
  const lines = [
    `${report.checks.length - failedChecks.length} of ${report.checks.length} checks passed`,
    `${report.balanceProofs.length - failedProofs.length} of ${report.balanceProofs.length} balance proofs passed`,
    ...failedChecks.map((c) => `check ${c.name}: ${c.status} (${c.count}) ${c.detail}`),
    ...failedProofs.map(
      (p) =>
        `proof ${p.symbol} (${p.chainId}) ${p.role} ${p.wallet}: ${p.result}${p.error ? ` (${p.error})` : ''}`,
    ),
  ];
  const cls = report.passed ? 'pass' : 'fail';
  return `<div id="banner" class="${cls}" role="status"><strong>${report.passed ? 'PASS' : 'FAIL'}</strong><ul>${lines
    .map((l) => `<li>${escapeHtml(l)}</li>`)
    .join('')}</ul></div>`;
}

const STYLE = `
:root { color-scheme: light; font-family: system-ui, sans-serif; font-size: 14px; color: #111827; }
body { margin: 0 auto; padding: 16px 24px 48px; max-width: 1200px; background: #f9fafb; }
h1 { font-size: 1.5rem; margin: 0 0 4px; }
h2 { font-size: 1.1rem; margin: 24px 0 8px; }
.meta { color: #4b5563; margin: 0 0 12px; }
#banner { border-radius: 6px; padding: 12px 16px; margin: 12px 0 20px; border: 2px solid; }
#banner strong { font-size: 1.4rem; }
#banner ul { margin: 6px 0 0; padding-left: 20px; }
#banner.pass { background: #ecfdf5; border-color: #059669; color: #065f46; }
#banner.fail { background: #fef2f2; border-color: #dc2626; color: #991b1b; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(480px, 1fr)); gap: 16px; }
figure { margin: 0; background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 12px; }
figcaption { font-weight: 600; margin-bottom: 4px; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart .grid { stroke: #d1d5db; stroke-width: 1; }
svg.chart .tick, svg.chart .xlabel { font-size: 11px; fill: #4b5563; }
svg.chart .nodata { font-size: 16px; fill: #9ca3af; }
svg.chart rect.bar:hover { opacity: 0.75; }
.legend { display: flex; flex-wrap: wrap; gap: 12px; font-size: 12px; color: #374151; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 13px; }
th, td { border: 1px solid #e5e7eb; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f4f6; }
td { overflow-wrap: anywhere; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.null, td.empty { color: #9ca3af; }
.status.ok { color: #047857; font-weight: 600; }
.status.bad { color: #b91c1c; font-weight: 600; }
.sev-critical { color: #b91c1c; font-weight: 600; }
td.details { font-family: ui-monospace, monospace; font-size: 12px; }
`;

export function renderHtml(report: ReconReport): string {
  const { payments, findings } = report;
  const store = report.storeId === null ? 'all stores' : `store ${report.storeId}`;
  const title = `Reconciliation ${report.period.from} → ${report.period.to}, ${store}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="${escapeHtml(`${report.schema} v${report.version}`)}">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p class="meta">${escapeHtml(
    `Period ${report.period.from} (inclusive) to ${report.period.to} (exclusive). Generated ${report.generatedAt}. ` +
      `Schema ${report.schema} version ${report.version}. Amounts are exact, in token units.`,
  )}</p>
${banner(report)}
<section class="charts">
${barChart(perDayChart(report, 'chart-volume', 'Confirmed volume per day (paid, by token)', 'paid'))}
${barChart(perDayChart(report, 'chart-fees', 'Fees per day (by token)', 'fees'))}
${barChart(netChart(report))}
${barChart(findingsChart(report))}
</section>
${table(
  'Checks',
  ['check', 'layer', 'status', 'count', 'detail'],
  report.checks.map((c) => [c.name, c.layer, status(c.status), c.count, c.detail]),
  [3],
)}
${table(
  'Account statements',
  ['store', 'account', 'type', 'chain', 'token', 'opening', 'debits', 'credits', 'closing'],
  report.accounts.map((a) => [
    a.storeId,
    a.code,
    a.type,
    a.chainId,
    a.symbol,
    a.opening,
    a.debits,
    a.credits,
    a.closing,
  ]),
  [5, 6, 7, 8],
)}
${table(
  'Payments by status',
  ['store', 'chain', 'token', 'status', 'count', 'requested', 'paid', 'fees', 'net'],
  payments.byStatus.map((p) => [
    p.storeId,
    p.chainId,
    p.symbol,
    p.status,
    p.count,
    p.requested,
    p.paid,
    p.fees,
    p.net,
  ]),
  [4, 5, 6, 7, 8],
)}
${table(
  'Fiat-priced payments',
  ['currency', 'status', 'count', 'amount'],
  payments.fiat.map((f) => [f.currency, f.status, f.count, f.amount]),
  [2, 3],
)}
${differencesTable('Underpaid', payments.underpaid)}
${differencesTable('Overpaid', payments.overpaid)}
${table(
  'Payouts',
  ['store', 'chain', 'token', 'outcome', 'count', 'amount', 'fees'],
  report.payouts.map((p) => [p.storeId, p.chainId, p.symbol, p.outcome, p.count, p.amount, p.fees]),
  [4, 5, 6],
)}
${table(
  'Findings by kind',
  ['kind', 'severity', 'new', 'open', 'resolved'],
  findings.byKind.map((k) => [k.kind, k.severity, k.new, k.open, k.resolved]),
  [2, 3, 4],
)}
${findingsTable('New findings', findings.new, findings.counts.new, report)}
${findingsTable('Open findings (from before the period)', findings.open, findings.counts.open, report)}
${findingsTable('Resolved findings', findings.resolved, findings.counts.resolved, report)}
${table(
  'Balance proofs',
  ['chain', 'token', 'wallet', 'role', 'block', 'ledger', 'on chain', 'result', 'error', 'proved at'],
  report.balanceProofs.map((p) => [
    p.chainId,
    p.symbol,
    p.wallet,
    p.role,
    p.blockNumber,
    p.ledgerBalance,
    p.chainBalance,
    status(p.result),
    p.error,
    p.provedAt,
  ]),
  [4, 5, 6],
)}
${table(
  'Trial balance',
  ['chain', 'token', 'token address', 'debits', 'credits', 'net'],
  report.trialBalance.map((t) => [t.chainId, t.symbol, t.token, t.debits, t.credits, t.net]),
  [3, 4, 5],
)}
</body>
</html>
`;
}
