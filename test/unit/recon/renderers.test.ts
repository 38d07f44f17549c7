import { describe, expect, it } from 'vitest';
import { escapeHtml } from '../../../src/html/escapeHtml.ts';
import { findingsCsvHeader, findingsCsvLines, renderCsv } from '../../../src/recon/report/renderCsv.ts';
import { renderHtml } from '../../../src/recon/report/renderHtml.ts';
import { renderJson } from '../../../src/recon/report/renderJson.ts';
import { renderMarkdown } from '../../../src/recon/report/renderMarkdown.ts';
import type { ReconReport } from '../../../src/recon/report/reportModel.ts';
import { sumDecimals } from '../../../src/recon/report/reportTotals.ts';
import { HOSTILE_FORMULA, HOSTILE_SCRIPT, sampleReport } from '../../helpers/reportFixture.ts';

/** A minimal RFC 4180 reader, so the tests check what an importer would see, not our own strings. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) throw new Error('CSV does not end with a newline');
  return rows;
}

/** findings.csv as writeReportFiles streams it, here from the report's (complete) lists. */
function findingsCsv(report: ReconReport): { name: string; content: string } {
  const { findings } = report;
  return {
    name: 'findings.csv',
    content:
      findingsCsvHeader() +
      findingsCsvLines('new', findings.new) +
      findingsCsvLines('open', findings.open) +
      findingsCsvLines('resolved', findings.resolved),
  };
}

function csvTable(report: ReconReport, name: string): Record<string, string>[] {
  const file = [...renderCsv(report), findingsCsv(report)].find((f) => f.name === name);
  if (file === undefined) throw new Error(`no ${name}`);
  const [header, ...rows] = parseCsv(file.content);
  return rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i] ?? '<missing>'])));
}

function emptyReport(passed: boolean): ReconReport {
  return sampleReport({
    passed,
    checks: [],
    accounts: [],
    payments: { byStatus: [], fiat: [], perDay: [], underpaid: [], overpaid: [] },
    payouts: [],
    suspense: { unclassified: [], classified: [] },
    findings: {
      counts: { new: 0, open: 0, resolved: 0 },
      byKind: [],
      unresolvedByAge: [],
      samplePerKind: 100,
      fullList: 'csv/findings.csv',
      new: [],
      open: [],
      resolved: [],
    },
    balanceProofs: [],
    trialBalance: [],
  });
}

describe('renderJson', () => {
  it('behavior: round-trips to an equal report, pretty, with a trailing newline', () => {
    const report = sampleReport();
    const json = renderJson(report);
    expect(JSON.parse(json)).toEqual(report);
    expect(json.endsWith('}\n')).toBe(true);
    expect(json.split('\n')[1]).toBe('  "schema": "stablebooks.reconciliation-report",');
    expect(json.split('\n')[2]).toBe('  "version": 2,');
  });

  it('behavior: stable whatever the key order of the input', () => {
    const report = sampleReport();
    const shuffled = Object.fromEntries(Object.entries(report).reverse()) as unknown as ReconReport;
    const finding = report.findings.new[1]!;
    const reordered = {
      ...shuffled,
      findings: {
        ...report.findings,
        new: [
          report.findings.new[0]!,
          { ...finding, details: Object.fromEntries(Object.entries(finding.details).reverse()) },
          ...report.findings.new.slice(2),
        ],
      },
    };
    expect(renderJson(reordered)).toBe(renderJson(report));
  });

  it('behavior: amounts stay strings, exactly as given', () => {
    const parsed = JSON.parse(renderJson(sampleReport())) as ReconReport;
    expect(parsed.payments.underpaid[0]!.difference).toBe('-1.500000');
    expect(parsed.payments.byStatus[2]!.fees).toBe('21.012500');
  });
});

describe('renderCsv', () => {
  const names = [
    'accounts.csv',
    'payments_by_status.csv',
    'payments_fiat.csv',
    'payments_per_day.csv',
    'underpaid.csv',
    'overpaid.csv',
    'payouts.csv',
    'balance_proofs.csv',
    'trial_balance.csv',
    'checks.csv',
  ];

  it('behavior: one file per table, each with a snake_case header and LF endings', () => {
    const files = renderCsv(sampleReport());
    expect(files.map((f) => f.name)).toEqual(names);
    for (const file of files) {
      expect(file.content.endsWith('\n')).toBe(true);
      expect(file.content).not.toContain('\r\n');
      const header = file.content.split('\n')[0]!.split(',');
      for (const column of header) expect(column).toMatch(/^[a-z][a-z0-9_]*$/);
    }
  });

  it('behavior: an empty report still has every header row', () => {
    const files = renderCsv(emptyReport(true));
    expect(files.map((f) => f.name)).toEqual(names);
    for (const file of files) {
      const lines = file.content.split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]!.length).toBeGreaterThan(0);
      expect(lines[1]).toBe('');
    }
    expect(findingsCsv(emptyReport(true)).content).toBe(
      'list,id,kind,severity,store_id,ref_type,ref_id,first_seen_at,last_seen_at,resolved_at,acked_at,ack_note,details\n',
    );
  });

  it('behavior: amounts exactly as the decimal strings, chain_id and symbol in their own columns', () => {
    const [row] = csvTable(sampleReport(), 'payments_by_status.csv');
    expect(row).toEqual({
      store_id: 'st_a',
      chain_id: '8453',
      symbol: 'USDC',
      status: 'CONFIRMED',
      count: '41',
      requested: '5336.500000',
      paid: '5336.500000',
      fees: '105.750000',
      net: '5230.750000',
    });
    const accounts = csvTable(sampleReport(), 'accounts.csv');
    expect(accounts[2]!.opening).toBe('-300.000000');
    expect(accounts[2]!.closing).toBe('-2401.250000');
  });

  it('behavior: negative amounts are not taken for formulas', () => {
    const content = renderCsv(sampleReport()).find((f) => f.name === 'underpaid.csv')!.content;
    expect(content.split('\n')[1]).toBe(
      'pi_under_1,st_a,8453,USDC,25.000000,23.500000,-1.500000,2026-11-03T10:11:12.000Z',
    );
  });

  it('error: text from outside that starts like a formula gets a leading apostrophe', () => {
    const findings = csvTable(sampleReport(), 'findings.csv');
    const hostile = findings.find((f) => f.id === 'f_new_2')!;
    expect(hostile.ref_id).toBe(`'${HOSTILE_FORMULA}`);
    // The details cell is JSON and starts with `{`, so it is quoted but needs no apostrophe.
    expect(JSON.parse(hostile.details!)).toEqual({ body: HOSTILE_SCRIPT, header: HOSTILE_FORMULA });

    const report = sampleReport({
      checks: [
        { name: '+sum(A1)', layer: 'matching', status: 'fail', count: 1, detail: '@SUM(1+1)' },
        { name: '-x', layer: 'matching', status: 'fail', count: 1, detail: '\tTAB' },
      ],
    });
    expect(csvTable(report, 'checks.csv').map((c) => [c.name, c.detail])).toEqual([
      ["'+sum(A1)", "'@SUM(1+1)"],
      ["'-x", "'\tTAB"],
    ]);
  });

  it('behavior: RFC 4180 quoting of commas, quotes and line breaks', () => {
    const report = sampleReport({
      checks: [{ name: 'a,b', layer: 'clearing', status: 'pass', count: 0, detail: 'say "hi"\nthen\r\nbye' }],
    });
    const content = renderCsv(report).find((f) => f.name === 'checks.csv')!.content;
    expect(content).toBe('name,layer,status,count,detail\n"a,b",clearing,pass,0,"say ""hi""\nthen\r\nbye"\n');
    expect(csvTable(report, 'checks.csv')[0]!.detail).toBe('say "hi"\nthen\r\nbye');
  });

  it('behavior: findings of the three lists, with their list and compact details', () => {
    const report = sampleReport();
    const findings = csvTable(report, 'findings.csv');
    expect(findings.map((f) => f.list)).toEqual(['new', 'new', 'new', 'new', 'open', 'open', 'resolved']);
    expect(findings[0]!.details).toBe('{"short":"1.500000"}');
    expect(findings[3]!.ack_note).toBe('refund, sent back by hand');
    expect(findings[0]!.resolved_at).toBe('');
  });
});

describe('renderMarkdown', () => {
  it('behavior: PASS headline with period and store, totals of CONFIRMED per token', () => {
    const md = renderMarkdown(sampleReport());
    expect(md.split('\n')[0]).toBe(
      '## ✅ PASS: reconciliation 2026-11-01T00:00:00.000Z → 2026-11-08T00:00:00.000Z, store st_a',
    );
    expect(md).toContain('| 1 | USDT | 12 | 2100.000000 | 2101.250000 | 21.012500 | 2080.237500 |');
    expect(md).toContain('| 8453 | USDC | 41 | 5336.500000 | 5336.500000 | 105.750000 | 5230.750000 |');
    expect(md).toContain('| 8453 | USDC | funded | 5 | 500.000000 | 0.420000 |');
    expect(md).toContain('| payment.underpaid | warning | 1 | 1 | 0 |');
    expect(md).toContain('### Suspense, unclassified\n\n| store | chain | token | count | amount |');
    expect(md).toContain('| st_a | 8453 | USDC | 2 | 37.5 |');
    expect(md).toContain('| owner_contribution | st_a | 1 | USDT | 1 | 1000 |');
    expect(md.endsWith('\n')).toBe(true);
  });

  it('behavior: FAIL headline and the failed proof', () => {
    const md = renderMarkdown(sampleReport({ storeId: null }, { failedProof: true }));
    expect(md.split('\n')[0]).toMatch(/^## ❌ FAIL: .*, all stores$/);
    expect(md).toMatch(/\| 10\.000000 \| 9\.999999 \| FAIL \|/);
  });

  it('error: pipes and line breaks in cells cannot break the table', () => {
    const md = renderMarkdown(
      sampleReport({
        checks: [{ name: 'x|y', layer: 'matching', status: 'fail', count: 2, detail: 'a | b\nc' }],
      }),
    );
    expect(md).toContain('| x\\|y | matching | FAIL | 2 | a \\| b c |');
    const row = md.split('\n').find((l) => l.startsWith('| x'))!;
    // Every unescaped pipe is a cell border: 5 cells need 6.
    expect(row.match(/(?<!\\)\|/g)).toHaveLength(6);
  });

  it('behavior: an empty report says none instead of empty tables', () => {
    const md = renderMarkdown(emptyReport(true));
    expect(md).toContain('### Checks\n\n_none_');
    expect(md).toContain('### Confirmed payments per token\n\n_none_');
    expect(md).toContain('### Suspense, unclassified\n\n_none_');
    expect(md).toContain('### Suspense, classified\n\n_none_');
  });
});

describe('renderHtml', () => {
  it('error: hostile strings from findings are escaped', () => {
    const html = renderHtml(sampleReport());
    expect(html).not.toContain('<script');
    expect(html).not.toContain(HOSTILE_SCRIPT);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain(escapeHtml(HOSTILE_FORMULA));
  });

  it('behavior: banner pass or fail follows report.passed', () => {
    expect(renderHtml(sampleReport())).toMatch(/<div id="banner" class="pass"/);
    const failed = renderHtml(sampleReport({}, { failedProof: true }));
    expect(failed).toMatch(/<div id="banner" class="fail"/);
    expect(failed).toContain('assertions.balance_proofs: fail');
    expect(renderHtml(emptyReport(false))).toMatch(/<div id="banner" class="fail"/);
  });

  it('behavior: self-contained: a CSP that forbids loads and no remote references', () => {
    const html = renderHtml(sampleReport());
    expect(html).toContain(
      `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`,
    );
    expect(html).not.toMatch(/\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?\/\//i);
    expect(html).not.toMatch(/url\(/i);
    expect(html).not.toMatch(/<(?:script|link|img|iframe|object|embed)\b/i);
    expect(html).not.toMatch(/@import/i);
  });

  it('behavior: one bar per token and day, with the exact decimal in its tooltip', () => {
    const html = renderHtml(sampleReport());
    const volume = html.match(/<svg id="chart-volume"[\s\S]*?<\/svg>/)![0];
    // 7 days × 2 tokens.
    expect(volume.match(/<rect class="bar"/g)).toHaveLength(14);
    expect(volume).toContain('<title>2026-11-03 · USDT (1) · paid: 422.000001</title>');
    const net = html.match(/<svg id="chart-net"[\s\S]*?<\/svg>/)![0];
    expect(net).toContain('net: 2080.237500</title>');
    const findings = html.match(/<svg id="chart-findings"[\s\S]*?<\/svg>/)![0];
    // 4 unresolved kinds × 4 age buckets.
    expect(findings.match(/<rect class="bar"/g)).toHaveLength(16);
    expect(findings).toContain('<title>payment.underpaid · &lt; 1 h · findings: 1</title>');
    expect(findings).toContain('<title>payment.underpaid · &gt; 7 d · findings: 1</title>');
    expect(findings).toContain('<title>clearing.in_transit_stale · &gt; 7 d · findings: 1</title>');
  });

  it('behavior: empty data draws "no data", never NaN', () => {
    const html = renderHtml(emptyReport(true));
    for (const id of ['chart-volume', 'chart-fees', 'chart-net', 'chart-findings']) {
      const svg = html.match(new RegExp(`<svg id="${id}"[\\s\\S]*?</svg>`))![0];
      expect(svg).toContain('>no data</text>');
      expect(svg).not.toContain('class="bar"');
    }
    expect(html).not.toMatch(/NaN|Infinity|undefined/);
    expect(renderHtml(sampleReport())).not.toMatch(/NaN|Infinity|undefined/);
  });

  it('behavior: all-zero values draw zero-height bars, not NaN', () => {
    const report = sampleReport();
    const zero = sampleReport({
      payments: {
        ...report.payments,
        perDay: report.payments.perDay.map((d) => ({ ...d, paid: '0.000000', fees: '0', net: '0' })),
      },
    });
    const html = renderHtml(zero);
    expect(html).not.toContain('NaN');
    const volume = html.match(/<svg id="chart-volume"[\s\S]*?<\/svg>/)![0];
    expect(volume).toContain('height="0.00"');
  });
});

describe('sumDecimals', () => {
  it('behavior: exact, keeps the largest scale, handles negatives', () => {
    expect(sumDecimals([])).toBe('0');
    expect(sumDecimals(['1.500000', '2'])).toBe('3.500000');
    expect(sumDecimals(['0.1', '0.2'])).toBe('0.3');
    expect(sumDecimals(['-1.5', '1.25'])).toBe('-0.25');
    expect(sumDecimals(['9007199254740993.000001', '1'])).toBe('9007199254740994.000001');
  });
});
