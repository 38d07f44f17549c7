/**
 * The report as one self-contained HTML page: inline CSS, charts drawn here as inline SVG, no
 * script, font, image or stylesheet from anywhere else. A Content-Security-Policy meta tag forbids
 * every network load, so the page can be mailed or archived and opened offline, and provably
 * fetches nothing when it is.
 *
 * Everything taken from the report is HTML-escaped: finding details, reference ids and RPC errors
 * come from outside and may hold markup. The only links are to the chain's block explorer
 * (`explorerUrl` of the chain registry, passed in `options.chains`): a transaction hash or an
 * address of the exact hex form, as `<explorer>/tx/<hash>`, with rel="noopener". They are
 * navigations a reader chooses, never loads.
 *
 * Written for finance people: the headline says what is proven and what needs attention; amounts
 * have thousands separators (formatted from the exact decimal strings, humanFormat.ts); dates are
 * UTC days, not timestamps; account statements have Debit and Credit columns; findings are
 * sentences (findingSentences.ts). The page is a list of sections (SECTIONS), each a function of
 * the report: a new block of the report model is a new function and one line there.
 *
 * Glossary: a chart has groups along the x axis (days, tokens, finding kinds) and, within each
 * group, one bar per series (tokens, age buckets).
 */

import type { ChainInfo } from '../../config/chainRegistry.ts';
import type { FindingRow } from '../../findings/finding.ts';
import { escapeHtml } from '../../html/escapeHtml.ts';
import { type ChainRef, findingSentence, type Sentence } from './findingSentences.ts';
import {
  formatAmount,
  formatCount,
  formatDateTime,
  formatMagnitude,
  formatPeriod,
  isNegative,
  isZero,
  longDay,
  shortDay,
  shortHex,
} from './humanFormat.ts';
import type { ChainHeadRow, ReconReport } from './reportModel.ts';
import {
  confirmedTotalsByToken,
  fiatFigureRows,
  fiatText,
  sumDecimals,
  type TokenKey,
  tokenLabel,
} from './reportTotals.ts';

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
  /** The x axis label ("3 Nov"). */
  label: string;
  /** The tooltip's name of the group ("3 November 2026"); default: the label. */
  title?: string;
  /** Series key → exact decimal string. A missing key is drawn as zero. */
  values: Map<string, string>;
}

interface Chart {
  id: string;
  title: string;
  /** What the numbers count, for the tooltip ("paid", "findings"). */
  measure: string;
  /** The exact value as the tooltip writes it. */
  format: (exact: string) => string;
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
      const tooltip = `${group.title ?? group.label} · ${series.label} · ${chart.measure}: ${chart.format(exact)}`;
      parts.push(
        `<rect class="bar" x="${px(groupX + groupWidth * 0.1 + s * barWidth)}" y="${px(top)}" width="${px(
          Math.max(barWidth - 1, 1),
        )}" height="${px(Math.abs(y(value) - y(0)))}" fill="${PALETTE[s % PALETTE.length]}"><title>${escapeHtml(
          tooltip,
        )}</title></rect>`,
      );
    });
    if (g % labelEvery === 0) {
      // ~6.5 px per character at 11 px: a longer label is cut, whole in the bars' tooltips.
      const fits = Math.max(3, Math.floor((groupWidth * labelEvery) / 6.5));
      const label = group.label.length > fits ? `${group.label.slice(0, fits - 1)}…` : group.label;
      parts.push(
        `<text class="xlabel" x="${px(groupX + groupWidth / 2)}" y="${HEIGHT - PAD.bottom + 16}" text-anchor="middle">${escapeHtml(
          label,
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
    format: formatAmount,
    series: tokenSeries(rows),
    groups: days.map((day) => {
      const values = new Map<string, string>();
      for (const row of rows.filter((r) => r.day === day)) {
        const key = tokenKey(row);
        values.set(key, sumDecimals([...(values.has(key) ? [values.get(key)!] : []), row[measure]]));
      }
      return { label: shortDay(day), title: longDay(day), values };
    }),
  };
}

function netChart(report: ReconReport): Chart {
  const totals = confirmedTotalsByToken(report);
  return {
    id: 'chart-net',
    title: 'Net of confirmed payments by token (paid − fees)',
    measure: 'net',
    format: formatAmount,
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
    format: (n) => formatAmount(n, 0),
    series: AGE_BUCKETS.map(({ key, label }) => ({ key, label })),
    groups: report.findings.unresolvedByAge.map((row) => ({
      label: row.kind,
      values: new Map(AGE_BUCKETS.map((b) => [b.key, String(row[b.key])])),
    })),
  };
}

// --- context ------------------------------------------------------------------------------------

/** What the renderer may know besides the report: the chain registry, for names and explorer links. */
export interface RenderHtmlOptions {
  chains?: { chain(chainId: number): Pick<ChainInfo, 'name' | 'tokens' | 'explorerUrl'> | undefined };
}

interface Ctx {
  report: ReconReport;
  options: RenderHtmlOptions;
}

/** A section of the page: a function of the report (SECTIONS). */
type Section = (ctx: Ctx) => string;

const TX_HASH_RE = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const EXPLORER_RE = /^https?:\/\/[^\s"'<>`]+$/;

function explorerOf(ctx: Ctx, chainId: number | null): string | null {
  if (chainId === null) return null;
  const url = ctx.options.chains?.chain(chainId)?.explorerUrl;
  return url !== undefined && EXPLORER_RE.test(url) ? url.replace(/\/+$/, '') : null;
}

/**
 * A hash or address, shortened, its whole value in the title; a link to the chain's explorer when
 * the chain has one and the value has the exact form (anything else is text).
 */
function chainRefHtml(ctx: Ctx, ref: ChainRef): string {
  const short = escapeHtml(shortHex(ref.value));
  const full = escapeHtml(ref.value);
  const explorer = explorerOf(ctx, ref.chainId);
  const form = ref.type === 'tx' ? TX_HASH_RE : ADDRESS_RE;
  if (explorer === null || !form.test(ref.value)) return `<span class="hex" title="${full}">${short}</span>`;
  const href = `${explorer}/${ref.type === 'tx' ? 'tx' : 'address'}/${ref.value}`;
  return `<a href="${escapeHtml(href)}" rel="noopener" title="${full}">${short}</a>`;
}

function sentenceHtml(ctx: Ctx, sentence: Sentence): string {
  return sentence.map((p) => (typeof p === 'string' ? escapeHtml(p) : chainRefHtml(ctx, p))).join('');
}

/** "USDC on Base" with the registry, else "USDC (8453)". */
function tokenName(ctx: Ctx, token: TokenKey): string {
  const chain = ctx.options.chains?.chain(token.chainId);
  return chain ? `${token.symbol} on ${chain.name}` : tokenLabel(token);
}

function chainName(ctx: Ctx, chainId: number): string {
  return ctx.options.chains?.chain(chainId)?.name ?? `chain ${chainId}`;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

// --- tables -------------------------------------------------------------------------------------

/** A cell: text (escaped), null (a dash), or markup built here from escaped parts. */
type Cell = string | number | null | { text: string; cls: string } | { html: string; cls?: string };

function td(cell: Cell, numeric: boolean): string {
  if (cell === null) return `<td class="null">—</td>`;
  if (typeof cell === 'object') {
    if ('html' in cell) return `<td${cell.cls ? ` class="${cell.cls}"` : ''}>${cell.html}</td>`;
    return `<td class="${cell.cls}">${escapeHtml(cell.text)}</td>`;
  }
  return `<td${numeric ? ' class="num"' : ''}>${escapeHtml(typeof cell === 'number' ? formatCount(cell) : cell)}</td>`;
}

interface TableSpec {
  id: string;
  title: string;
  /** A sentence under the title, saying how to read the table. */
  note?: string;
  header: string[];
  rows: Cell[][];
  /** Columns aligned right (amounts, counts). */
  numeric?: number[];
}

function table(spec: TableSpec): string {
  const numeric = spec.numeric ?? [];
  const body =
    spec.rows.length === 0
      ? `<tr><td class="empty" colspan="${spec.header.length}">none</td></tr>`
      : spec.rows.map((r) => `<tr>${r.map((c, i) => td(c, numeric.includes(i))).join('')}</tr>`).join('\n');
  const head = spec.header.map(
    (h, i) => `<th${numeric.includes(i) ? ' class="num"' : ''}>${escapeHtml(h)}</th>`,
  );
  const note = spec.note === undefined ? '' : `<p class="note">${escapeHtml(spec.note)}</p>`;
  return `<section id="${spec.id}"><h2>${escapeHtml(spec.title)}</h2>${note}<table><thead><tr>${head.join('')}</tr></thead><tbody>
${body}
</tbody></table></section>`;
}

const STATUS_WORDS = { pass: 'passed', fail: 'failed', error: 'could not run' } as const;

function status(value: 'pass' | 'fail' | 'error'): Cell {
  return { text: STATUS_WORDS[value], cls: `status ${value === 'pass' ? 'ok' : 'bad'}` };
}

/** A balance, debit-positive in the model, as a person reads it: "1,200.00 Dr", "300.00 Cr", "0.00". */
function balance(text: string): Cell {
  if (isZero(text)) return formatMagnitude(text);
  return `${formatMagnitude(text)} ${isNegative(text) ? 'Cr' : 'Dr'}`;
}

/** An amount of a Debit or Credit column: positive, blank when zero. */
function side(text: string): Cell {
  return isZero(text) ? '' : formatMagnitude(text);
}

function amountWith(text: string, unit: string): string {
  return `${formatAmount(text)} ${unit}`;
}

// --- sections -----------------------------------------------------------------------------------

function failedProofLine(ctx: Ctx, p: ReconReport['balanceProofs'][number]): string {
  const wallet = `The ${p.role} wallet ${chainRefHtml(ctx, { type: 'address', value: p.wallet, chainId: p.chainId })} on ${escapeHtml(chainName(ctx, p.chainId))}`;
  if (p.chainBalance === null || p.result === 'error')
    return `${wallet} (${escapeHtml(p.symbol)}) could not be proven${p.error ? `: ${escapeHtml(p.error)}` : ''}.`;
  return `${wallet}: the ledger says ${escapeHtml(amountWith(p.ledgerBalance, p.symbol))}, the chain ${escapeHtml(
    amountWith(p.chainBalance, p.symbol),
  )}${p.blockNumber ? ` at block ${escapeHtml(formatAmount(p.blockNumber, 0))}` : ''}.`;
}

/**
 * What is proven and what needs attention. "Books balance and match the chain" only when every
 * check and every balance proof passed; otherwise the number of checks that need attention, as a
 * warning (the books are proven, clearing or matching found something) or critical (an assertion
 * failed or a source could not be read), with the checks listed. Never a pass above a failure.
 */
const headlineSection: Section = (ctx) => {
  const { report } = ctx;
  const failed = report.checks.filter((c) => c.status !== 'pass');
  const passed = report.checks.filter((c) => c.status === 'pass');
  const failedProofs = report.balanceProofs.filter((p) => p.result !== 'pass');
  const proofsLine = `${formatCount(report.balanceProofs.length - failedProofs.length)} of ${plural(
    report.balanceProofs.length,
    'wallet balance',
  )} equal the chain.`;

  if (report.checks.length === 0) {
    return `<div id="headline" class="warning" role="status"><h2>No checks ran in this period</h2><p>Nothing is proven: run the reconciliation again.</p></div>`;
  }
  if (failed.length === 0 && failedProofs.length === 0) {
    const items = [
      `All ${plural(report.checks.length, 'check')} passed.`,
      proofsLine,
      ...passed.map((c) => `${c.name}: ${c.detail}`),
    ];
    return `<div id="headline" class="ok" role="status"><h2>Books balance and match the chain</h2><ul>${items
      .map((i) => `<li>${escapeHtml(i)}</li>`)
      .join('')}</ul></div>`;
  }

  const attention = Math.max(failed.length, 1);
  const cls = report.passed ? 'warning' : 'critical';
  const summary = report.passed
    ? 'The books are proven (every balance proof and the trial balance passed); these checks found something for a person to look at.'
    : 'The books are not proven: an assertion failed or a source could not be read.';
  const checkItems = failed.map(
    (c) =>
      `<li><strong>${escapeHtml(c.name)}</strong> ${escapeHtml(STATUS_WORDS[c.status])}: ${escapeHtml(c.detail)}${
        c.name === 'assertions.balance_proofs' && failedProofs.length > 0
          ? `<ul>${failedProofs.map((p) => `<li>${failedProofLine(ctx, p)}</li>`).join('')}</ul>`
          : ''
      }</li>`,
  );
  // A failed proof without a failed proofs check (a report built by hand) is still listed.
  if (!failed.some((c) => c.name === 'assertions.balance_proofs'))
    checkItems.push(...failedProofs.map((p) => `<li>${failedProofLine(ctx, p)}</li>`));
  const proven =
    passed.length === 0
      ? ''
      : `<p class="proven">Passed: ${passed.map((c) => escapeHtml(c.name)).join(', ')}. ${escapeHtml(proofsLine)}</p>`;
  return `<div id="headline" class="${cls}" role="alert"><h2>${escapeHtml(
    `${attention} ${attention === 1 ? 'check needs' : 'checks need'} attention`,
  )}</h2><p>${escapeHtml(summary)}</p><ul>${checkItems.join('')}</ul>${proven}</div>`;
};

/** Confirmed payments per token and their fiat value, at a glance. */
const glanceSection: Section = (ctx) => {
  const { report } = ctx;
  const confirmed = confirmedTotalsByToken(report);
  const fiat = report.payments.fiat.filter((f) => f.status === 'CONFIRMED');
  const items = [
    ...confirmed.map(
      (t) =>
        `${plural(t.count, 'confirmed payment')} in ${tokenName(ctx, t)}: ${formatAmount(t.paid)} paid, ${formatAmount(
          t.fees,
        )} fees, ${formatAmount(t.net)} net.`,
    ),
    ...fiat.map(
      (f) => `${plural(f.count, 'payment')} priced in ${f.currency}: ${amountWith(f.amount, f.currency)}.`,
    ),
  ];
  if (items.length === 0) return '';
  return `<section id="glance"><h2>At a glance</h2><ul>${items.map((i) => `<li>${escapeHtml(i)}</li>`).join('')}</ul></section>`;
};

const chartsSection: Section = (ctx) => `<section class="charts">
${barChart(perDayChart(ctx.report, 'chart-volume', 'Confirmed payments per day (paid, by token)', 'paid'))}
${barChart(perDayChart(ctx.report, 'chart-fees', 'Fees per day (by token)', 'fees'))}
${barChart(netChart(ctx.report))}
${barChart(findingsChart(ctx.report))}
</section>`;

const checksSection: Section = (ctx) =>
  table({
    id: 'checks',
    title: 'Checks',
    header: ['check', 'layer', 'result', 'findings', 'detail'],
    rows: ctx.report.checks.map((c) => [c.name, c.layer, status(c.status), c.count, c.detail]),
    numeric: [3],
  });

const accountsSection: Section = (ctx) =>
  table({
    id: 'accounts',
    title: 'Account statements',
    note: 'Per account over the period, like a bank statement: the opening and closing balances (Dr: debit balance, Cr: credit balance) and the period’s debits and credits.',
    header: ['Account', 'Store', 'Token', 'Opening balance', 'Debit', 'Credit', 'Closing balance'],
    rows: ctx.report.accounts.map((a) => [
      a.code,
      a.storeId,
      tokenName(ctx, a),
      balance(a.opening),
      side(a.debits),
      side(a.credits),
      balance(a.closing),
    ]),
    numeric: [3, 4, 5, 6],
  });

const paymentsSection: Section = (ctx) =>
  table({
    id: 'payments',
    title: 'Payments by status',
    header: ['store', 'token', 'status', 'count', 'requested', 'paid', 'fees', 'net'],
    rows: ctx.report.payments.byStatus.map((p) => [
      p.storeId,
      tokenName(ctx, p),
      p.status,
      p.count,
      formatAmount(p.requested),
      formatAmount(p.paid),
      formatAmount(p.fees),
      formatAmount(p.net),
    ]),
    numeric: [3, 4, 5, 6, 7],
  });

const fiatSection: Section = (ctx) =>
  table({
    id: 'fiat',
    title: 'Fiat-priced payments',
    note: 'Intents priced in a currency: the amount the customer was asked for, by status.',
    header: ['currency', 'status', 'count', 'amount'],
    rows: ctx.report.payments.fiat.map((f) => [
      f.currency,
      f.status,
      f.count,
      amountWith(f.amount, f.currency),
    ]),
    numeric: [2, 3],
  });

function differencesTable(
  ctx: Ctx,
  id: string,
  title: string,
  rows: ReconReport['payments']['underpaid'],
): string {
  return table({
    id,
    title,
    header: ['intent', 'store', 'token', 'requested', 'paid', 'difference', 'confirmed'],
    rows: rows.map((r) => [
      r.intentId,
      r.storeId,
      tokenName(ctx, r),
      formatAmount(r.requested),
      formatAmount(r.paid),
      `${formatMagnitude(r.difference)} ${isNegative(r.difference) ? 'short' : 'over'}`,
      formatDateTime(r.confirmedAt),
    ]),
    numeric: [3, 4, 5],
  });
}

const differencesSection: Section = (ctx) =>
  [
    differencesTable(ctx, 'underpaid', 'Underpaid', ctx.report.payments.underpaid),
    differencesTable(ctx, 'overpaid', 'Overpaid', ctx.report.payments.overpaid),
  ].join('\n');

const payoutsSection: Section = (ctx) =>
  table({
    id: 'payouts',
    title: 'Payouts',
    header: ['store', 'token', 'outcome', 'count', 'amount', 'fees'],
    rows: ctx.report.payouts.map((p) => [
      p.storeId,
      tokenName(ctx, p),
      p.outcome,
      p.count,
      formatAmount(p.amount),
      formatAmount(p.fees),
    ]),
    numeric: [3, 4, 5],
  });

function findingsTable(ctx: Ctx, id: string, title: string, rows: FindingRow[], total: number): string {
  const { samplePerKind, fullList } = ctx.report.findings;
  const where = fullList === null ? 'stablebooks findings list' : fullList;
  return table({
    id,
    title:
      rows.length < total
        ? `${title}: the first ${samplePerKind} of each kind, ${formatCount(rows.length)} of ${formatCount(total)} (every one: ${where})`
        : title,
    header: ['severity', 'finding', 'first seen', 'last seen', 'resolved', 'acknowledged'],
    rows: rows.map((f) => [
      { text: f.severity, cls: `sev-${f.severity === 'critical' ? 'critical' : 'other'}` },
      {
        html: `${sentenceHtml(ctx, findingSentence(f, ctx.options.chains))} <span class="kind">${escapeHtml(
          `${f.kind} · #${f.id}`,
        )}</span>`,
        cls: 'sentence',
      },
      formatDateTime(f.firstSeenAt),
      formatDateTime(f.lastSeenAt),
      formatDateTime(f.resolvedAt),
      f.ackedAt === null
        ? null
        : `${formatDateTime(f.ackedAt)}${f.ackNote === null ? '' : ` (${f.ackNote})`}`,
    ]),
  });
}

const findingsSection: Section = (ctx) => {
  const { findings } = ctx.report;
  return [
    table({
      id: 'findings-by-kind',
      title: 'Findings by kind',
      header: ['kind', 'severity', 'new', 'open', 'resolved'],
      rows: findings.byKind.map((k) => [k.kind, k.severity, k.new, k.open, k.resolved]),
      numeric: [2, 3, 4],
    }),
    findingsTable(ctx, 'findings-new', 'New findings', findings.new, findings.counts.new),
    findingsTable(
      ctx,
      'findings-open',
      'Open findings (from before the period)',
      findings.open,
      findings.counts.open,
    ),
    findingsTable(ctx, 'findings-resolved', 'Resolved findings', findings.resolved, findings.counts.resolved),
  ].join('\n');
};

const proofsSection: Section = (ctx) =>
  table({
    id: 'proofs',
    title: 'Balance proofs',
    note: 'Each wallet’s balance in the books against the token contract’s balanceOf on chain.',
    header: ['token', 'wallet', 'role', 'block', 'ledger', 'on chain', 'result', 'error', 'proved'],
    rows: ctx.report.balanceProofs.map((p) => [
      tokenName(ctx, p),
      { html: chainRefHtml(ctx, { type: 'address', value: p.wallet, chainId: p.chainId }), cls: 'hexcell' },
      p.role,
      p.blockNumber === null ? null : formatAmount(p.blockNumber, 0),
      formatAmount(p.ledgerBalance),
      p.chainBalance === null ? null : formatAmount(p.chainBalance),
      status(p.result),
      p.error,
      formatDateTime(p.provedAt),
    ]),
    numeric: [3, 4, 5],
  });

const trialBalanceSection: Section = (ctx) =>
  table({
    id: 'trial-balance',
    title: 'Trial balance',
    note: 'Per token, the debit balances and the credit balances of every account: they must be equal.',
    header: ['Token', 'Debit', 'Credit', 'Difference'],
    rows: ctx.report.trialBalance.map((t) => [
      tokenName(ctx, t),
      formatMagnitude(t.debits),
      formatMagnitude(t.credits),
      formatAmount(t.net),
    ]),
    numeric: [1, 2, 3],
  });

const ledgerChainSection: Section = (ctx) => {
  const { atPeriodEnd, atGeneration } = ctx.report.ledgerChain;
  const row = (label: string, h: ChainHeadRow | null): Cell[] =>
    h === null
      ? [label, null, null, null, null]
      : [
          label,
          formatAmount(h.seq, 0),
          { text: h.hash, cls: 'hexcell' },
          h.entryId,
          formatDateTime(h.sealedAt),
        ];
  return table({
    id: 'ledger-chain',
    title: 'Ledger hash chain',
    note:
      'Each entry is sealed with a hash over it and every entry before it. Keep this report: ' +
      '`stablebooks ledger verify --head <entries>:<hash>` recomputes the chain from the books as they are then, ' +
      'and fails if any entry it covers was changed since.',
    header: ['head', 'entries', 'hash', 'last entry', 'sealed'],
    rows: [row('at the end of the period', atPeriodEnd), row('when this report was made', atGeneration)],
    numeric: [1],
  });
};

/** Per store, revenue, fees, payouts and the FX result in its functional currency. */
const valuationSection: Section = (ctx) => {
  const { valuation } = ctx.report;
  if (valuation.length === 0) return '';
  const missing = valuation.flatMap((v) =>
    v.missingRates.map(
      (m) => `Store ${v.storeId}: no ${v.currency} rate for ${m.symbol} on ${longDay(m.date)}.`,
    ),
  );
  const closing = [...new Set(valuation.map((v) => longDay(v.closingDate)))].join(', ');
  return `${table({
    id: 'valuation',
    title: 'In the functional currency',
    note:
      'Each figure is the period’s postings of the named accounts valued at their day’s rate, debit-positive as the accounts carry them (revenue, a credit, is negative). ' +
      `Unrealised FX: the holdings’ closing balances at the closing rate (${closing}) against their valued cost; a gain is positive. ` +
      'A figure with a posting no rate values is unvalued, never zero.',
    header: ['store', 'figure', 'accounts', 'tokens', 'value'],
    rows: fiatFigureRows(ctx.report).map((f) => [
      f.storeId,
      f.label,
      f.accounts.join(', '),
      f.tokens,
      f.value === null ? { text: fiatText(f), cls: 'unvalued' } : { text: fiatText(f), cls: 'num' },
    ]),
  })}${missing.length === 0 ? '' : `\n<ul id="valuation-missing">${missing.map((m) => `<li>${escapeHtml(m)}</li>`).join('')}</ul>`}`;
};

/** The page, top to bottom. A new block of the report is a new Section and one line here. */
const suspenseSection: Section = (ctx) => {
  const { unclassified, classified } = ctx.report.suspense;
  return [
    table({
      id: 'suspense-unclassified',
      title: 'Suspense waiting for a person',
      note: 'Money that came into a watched wallet and that nothing explains yet (stablebooks suspense list; classify it with stablebooks suspense classify).',
      header: ['store', 'token', 'items', 'amount'],
      rows: unclassified.map((u) => [u.storeId, tokenName(ctx, u), u.count, formatAmount(u.amount)]),
      numeric: [2, 3],
    }),
    table({
      id: 'suspense-classified',
      title: 'Suspense classified by a person',
      header: ['classification', 'store', 'token', 'items', 'amount'],
      rows: classified.map((c) => [
        c.classification.replaceAll('_', ' '),
        c.storeId,
        tokenName(ctx, c),
        c.count,
        formatAmount(c.amount),
      ]),
      numeric: [3, 4],
    }),
  ].join('\n');
};

/** A person's corrections of what the rules left for a person (stablebooks adjust). */
const correctionsSection: Section = (ctx) =>
  table({
    id: 'corrections',
    title: 'Corrections',
    note: 'Leftovers the rules leave for a person, moved by a person with a reason (stablebooks adjust move; undone with stablebooks adjust undo).',
    header: [
      'correction',
      'finding',
      'intent',
      'store',
      'token',
      'amount',
      'from',
      'to',
      'by',
      'note',
      'undone',
    ],
    rows: ctx.report.corrections.map((c) => [
      c.id,
      `${c.findingId} (${c.findingKind.replaceAll('_', ' ')})`,
      c.intentId,
      c.storeId,
      tokenName(ctx, c),
      formatAmount(c.amount),
      c.fromAccount,
      c.toAccount,
      c.madeBy,
      c.note,
      c.undoneAt === null ? '—' : `${formatDateTime(c.undoneAt)} by ${c.undoneBy}: ${c.undoNote}`,
    ]),
    numeric: [5],
  });

const SECTIONS: Section[] = [
  headlineSection,
  glanceSection,
  chartsSection,
  checksSection,
  accountsSection,
  paymentsSection,
  fiatSection,
  differencesSection,
  payoutsSection,
  valuationSection,
  suspenseSection,
  correctionsSection,
  findingsSection,
  proofsSection,
  trialBalanceSection,
  ledgerChainSection,
];

// --- page ---------------------------------------------------------------------------------------

const STYLE = `
:root { color-scheme: light; font-family: system-ui, sans-serif; font-size: 14px; color: #111827; }
body { margin: 0 auto; padding: 16px 24px 48px; max-width: 1200px; background: #f9fafb; }
h1 { font-size: 1.5rem; margin: 0 0 4px; }
h2 { font-size: 1.1rem; margin: 24px 0 8px; }
.meta, .note, .footer { color: #4b5563; margin: 0 0 12px; }
#headline { border-radius: 6px; padding: 12px 16px; margin: 12px 0 20px; border: 2px solid; }
#headline h2 { font-size: 1.4rem; margin: 0 0 6px; }
#headline p { margin: 4px 0; }
#headline ul { margin: 6px 0 0; padding-left: 20px; }
#headline.ok { background: #ecfdf5; border-color: #059669; color: #065f46; }
#headline.warning { background: #fffbeb; border-color: #d97706; color: #92400e; }
#headline.critical { background: #fef2f2; border-color: #dc2626; color: #991b1b; }
#headline .proven { color: #374151; }
#glance ul { margin: 0; padding-left: 20px; }
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
td.unvalued { color: #b45309; font-weight: 600; }
.status.ok { color: #047857; font-weight: 600; }
.status.bad { color: #b91c1c; font-weight: 600; }
.sev-critical { color: #b91c1c; font-weight: 600; }
td.sentence { min-width: 420px; }
.kind { color: #6b7280; font-size: 11px; white-space: nowrap; }
.hex, a[title] { font-family: ui-monospace, monospace; font-size: 12px; white-space: nowrap; }
a { color: #1d4ed8; }
`;

export function renderHtml(report: ReconReport, options: RenderHtmlOptions = {}): string {
  const ctx: Ctx = { report, options };
  const period = formatPeriod(report.period.from, report.period.to);
  const store = report.storeId === null ? 'all stores' : `store ${report.storeId}`;
  const title = `Reconciliation report: ${period}, ${store}`;
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
<p class="meta">${escapeHtml(`Generated ${formatDateTime(report.generatedAt)}. Amounts are exact, in token units.`)}</p>
${SECTIONS.map((section) => section(ctx))
  .filter((html) => html !== '')
  .join('\n')}
<p class="footer">${escapeHtml(
    `The period runs from ${formatDateTime(report.period.from)} (inclusive) to ${formatDateTime(report.period.to)} (exclusive). Schema ${report.schema} version ${report.version}.`,
  )}</p>
</body>
</html>
`;
}
