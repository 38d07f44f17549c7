import { describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import { escapeHtml } from '../../../src/html/escapeHtml.ts';
import { findingsCsvHeader, findingsCsvLines, renderCsv } from '../../../src/recon/report/renderCsv.ts';
import { renderHtml } from '../../../src/recon/report/renderHtml.ts';
import { renderJson } from '../../../src/recon/report/renderJson.ts';
import { renderMarkdown } from '../../../src/recon/report/renderMarkdown.ts';
import type { ReconReport } from '../../../src/recon/report/reportModel.ts';
import { sumDecimals } from '../../../src/recon/report/reportTotals.ts';
import {
  HOSTILE_FORMULA,
  HOSTILE_SCRIPT,
  sampleReport,
  UNMATCHED_IN_TX,
  UNMATCHED_OUT_TX,
} from '../../helpers/reportFixture.ts';

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
    corrections: [],
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
    ledgerChain: { atPeriodEnd: null, atGeneration: null },
    valuation: [],
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
    'valuation.csv',
    'balance_proofs.csv',
    'trial_balance.csv',
    'ledger_chain.csv',
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
    expect(findings[0]!.details).toBe(
      '{"token":"USDC","chain_id":8453,"amount_coins":"25","actual_paid_amount":"23.5","difference":"1.5"}',
    );
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
    expect(md).toContain('| underpaid | info | 1 | 1 | 0 |');
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
    expect(md).toContain('### Corrections\n\n_none_');
  });

  it('behavior: a correction is a row with its finding, accounts, who and why (a pipe in the note escaped)', () => {
    const md = renderMarkdown(sampleReport());
    const block = md.slice(md.indexOf('### Corrections'), md.indexOf('### Findings by kind'));
    expect(block).toContain(
      '| 1 | 7 (payment_amount_mismatch) | ci_short | st_a | USDC | 1 | assets:in_transit | expense:sales_shortfall | alice | the payer sent 1 USDC less; written off \\| agreed | — |',
    );
  });
});

describe('fiat figures (issue 34)', () => {
  it('behavior: each format shows the valued figures and unvalued, never 0, for one without a rate', () => {
    const report = sampleReport();
    const rows = csvTable(report, 'valuation.csv');
    expect(rows.find((r) => r.figure === 'revenue')).toEqual({
      store_id: 'st_a',
      currency: 'EUR',
      figure: 'revenue',
      accounts: 'income:sales',
      tokens: 'USDT (1): -25',
      value: '-23.08',
      unvalued_postings: '0',
    });
    expect(rows.find((r) => r.figure === 'payouts')).toMatchObject({
      value: 'unvalued',
      unvalued_postings: '1',
    });
    expect(rows.find((r) => r.figure === 'fxResult')).toMatchObject({ value: 'unvalued' });
    expect(rows.find((r) => r.figure === 'fxUnrealised')).toMatchObject({ value: '0.16' });

    const md = renderMarkdown(report);
    expect(md).toContain('| st_a | revenue | income:sales | USDT (1): -25 | -23.08 EUR |');
    expect(md).toContain(
      '| st_a | payouts | expense:payouts | USDC (8453): 50 | unvalued (1 without a rate) |',
    );
    expect(md).toContain('no EUR rate for USDC on 2026-11-05');

    const html = renderHtml(report);
    const section = html.slice(html.indexOf('<section id="valuation">'));
    expect(section).toContain('<td class="num">0.28 EUR</td>');
    expect(section).toContain('<td class="unvalued">unvalued (1 without a rate)</td>');
    expect(section).toMatch(
      /<td>payouts<\/td><td>expense:payouts<\/td><td>USDC \(8453\): 50<\/td><td class="unvalued">/,
    );
    expect(html).toContain('no EUR rate for USDC on');

    const parsed = JSON.parse(renderJson(report)) as ReconReport;
    expect(parsed.valuation[0]!.payouts.value).toBeNull();
    expect(parsed.valuation[0]!.revenue.value).toBe('-23.08');
  });

  it('behavior: no stores valued, no section', () => {
    const report = sampleReport({ valuation: [] });
    expect(renderHtml(report)).not.toContain('id="valuation"');
    expect(renderMarkdown(report)).toContain('### In the functional currency\n\n_none_');
  });
});

describe('renderHtml', () => {
  it('behavior: suspense waiting for a person and suspense a person classified, apart', () => {
    const html = renderHtml(sampleReport());
    const section = (id: string) =>
      html.slice(
        html.indexOf(`<section id="${id}">`),
        html.indexOf('</section>', html.indexOf(`<section id="${id}">`)),
      );
    expect(section('suspense-unclassified')).toContain('Suspense waiting for a person');
    expect(section('suspense-unclassified')).toMatch(
      /<td>st_a<\/td><td>USDC \(8453\)<\/td><td class="num">2<\/td><td class="num">37\.50<\/td>/,
    );
    expect(section('suspense-classified')).toMatch(
      /<td>owner contribution<\/td><td>st_a<\/td><td>USDT \(1\)<\/td><td class="num">1<\/td><td class="num">1,000\.00<\/td>/,
    );
    expect(section('suspense-unclassified')).not.toContain('owner contribution');
  });

  it('behavior: the corrections table names each correction, its accounts and its reason', () => {
    const html = renderHtml(sampleReport());
    const start = html.indexOf('<section id="corrections">');
    expect(start).toBeGreaterThan(0);
    const section = html.slice(start, html.indexOf('</section>', start));
    expect(section).toContain('<td>assets:in_transit</td><td>expense:sales_shortfall</td><td>alice</td>');
    expect(section).toContain('<td class="num">1.00</td>');
    expect(section).toContain('payment amount mismatch');
  });

  it('error: hostile strings from findings are escaped', () => {
    const html = renderHtml(sampleReport());
    expect(html).not.toContain('<script');
    expect(html).not.toContain(HOSTILE_SCRIPT);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain(escapeHtml(HOSTILE_FORMULA));
  });

  it('behavior: the headline says the books balance only when every check passed', () => {
    const headline = (html: string) => html.match(/<div id="headline"[\s\S]*?<\/div>/)![0];
    const ok = headline(renderHtml(sampleReport()));
    expect(ok).toMatch(/^<div id="headline" class="ok"/);
    expect(ok).toContain('<h2>Books balance and match the chain</h2>');

    const attention = headline(renderHtml(sampleReport({}, { failedChecks: true })));
    expect(attention).toMatch(/^<div id="headline" class="warning"/);
    expect(attention).toContain('<h2>2 checks need attention</h2>');
    expect(attention).not.toMatch(/Books balance|PASS|class="ok"/);

    const failed = headline(renderHtml(sampleReport({}, { failedProof: true })));
    expect(failed).toMatch(/^<div id="headline" class="critical"/);
    expect(failed).toContain('<h2>1 check needs attention</h2>');
    expect(failed).toContain('<strong>assertions.balance_proofs</strong> failed');
    expect(failed).toContain('the ledger says 10.00 USDT, the chain 9.999999 USDT at block 21,450,777.');

    expect(headline(renderHtml(emptyReport(true)))).toContain('<h2>No checks ran in this period</h2>');
    // No check failed, but a proof did (a report built by hand): never the pass headline.
    const proofOnly = sampleReport({}, { failedProof: true });
    proofOnly.checks = proofOnly.checks.filter((c) => c.name !== 'assertions.balance_proofs');
    expect(headline(renderHtml(proofOnly))).not.toContain('Books balance');
  });

  it('behavior: statements in Debit and Credit columns, positive, with separators; balances Dr or Cr', () => {
    const html = renderHtml(sampleReport());
    const accounts = html.match(/<section id="accounts">[\s\S]*?<\/section>/)![0];
    expect(accounts).toContain('<th class="num">Debit</th><th class="num">Credit</th>');
    const sales = accounts.split('\n').find((l) => l.includes('income:sales'))!;
    expect(sales).toContain(
      '<td class="num">300.00 Cr</td><td class="num"></td><td class="num">2,101.25</td><td class="num">2,401.25 Cr</td>',
    );
    expect(accounts).not.toMatch(/>-\d/);
    const trial = html.match(/<section id="trial-balance">[\s\S]*?<\/section>/)![0];
    expect(trial).toContain(
      '<td class="num">11,067.25</td><td class="num">11,067.25</td><td class="num">0.00</td>',
    );
  });

  it('behavior: dates, not timestamps', () => {
    const html = renderHtml(sampleReport());
    expect(html).toContain('<title>Reconciliation report: 1–7 November 2026 (UTC), store st_a</title>');
    expect(html).toContain('Generated 8 Nov 2026, 00:30 UTC.');
    const body = html.slice(html.indexOf('<body>'));
    expect(body).not.toMatch(/\d{4}-\d\d-\d\d(T|<)/);
  });

  it('behavior: findings are sentences; hashes link to the chain explorer, shortened, only in their exact form', () => {
    const html = renderHtml(sampleReport(), { chains: createChainRegistry() });
    expect(html).toContain(
      `A transfer of 1,250.00 USDT into the merchant wallet of st_a matched no payment (tx <a href="https://etherscan.io/tx/${UNMATCHED_IN_TX}" rel="noopener" title="${UNMATCHED_IN_TX}">0xab58…a5cd</a>).`,
    );
    expect(html).toContain(`<a href="https://basescan.org/tx/${UNMATCHED_OUT_TX}" rel="noopener"`);
    // Every link is an explorer's, with rel="noopener"; nothing else refers outside.
    const links = [...html.matchAll(/<a [^>]*>/g)].map((m) => m[0]);
    expect(links.length).toBeGreaterThan(2);
    for (const link of links)
      expect(link).toMatch(
        /^<a href="https:\/\/(etherscan\.io|basescan\.org)\/(tx|address)\/0x[0-9a-f]+" rel="noopener" title="0x[0-9a-fA-F]+">$/i,
      );
    expect(html.replace(/<a href="https:[^"]*" rel="noopener"/g, '')).not.toMatch(/\b(?:src|href)\s*=/i);
    // The unknown kind reads as a list, never as JSON; its hostile values stay text.
    expect(html).toContain('Webhook bad signature on webhook =cmd|');
    expect(html).not.toMatch(/\{&quot;|\{"/);

    // A local chain has no explorer: the hash is text, shortened, whole in its title.
    const local = sampleReport();
    local.findings.new = local.findings.new.map((f) =>
      f.kind === 'unmatched_transfer_in' ? { ...f, details: { ...f.details, chain_id: 31337 } } : f,
    );
    const plain = renderHtml(local, { chains: createChainRegistry() });
    expect(plain).toContain(`(tx <span class="hex" title="${UNMATCHED_IN_TX}">0xab58…a5cd</span>)`);
    expect(plain).not.toContain(`/tx/${UNMATCHED_IN_TX}`);
    // A CHAINS_FILE may remove a default explorer.
    const none = renderHtml(sampleReport(), {
      chains: createChainRegistry([{ chain_id: 1, explorer_url: null }]),
    });
    expect(none).not.toContain('etherscan.io');
    expect(none).toContain('basescan.org/tx/');
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
    expect(volume).toContain('<title>3 November 2026 · USDT (1) · paid: 422.000001</title>');
    expect(volume).toContain('text-anchor="middle">3 Nov</text>');
    const net = html.match(/<svg id="chart-net"[\s\S]*?<\/svg>/)![0];
    expect(net).toContain('net: 2,080.2375</title>');
    expect(net).toContain('>5,230.75</text>');
    const findings = html.match(/<svg id="chart-findings"[\s\S]*?<\/svg>/)![0];
    // 5 unresolved kinds × 4 age buckets.
    expect(findings.match(/<rect class="bar"/g)).toHaveLength(20);
    expect(findings).toContain('<title>underpaid · &lt; 1 h · findings: 1</title>');
    expect(findings).toContain('<title>underpaid · &gt; 7 d · findings: 1</title>');
    expect(findings).toContain('<title>webhook_without_chain_proof · &gt; 7 d · findings: 1</title>');
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
