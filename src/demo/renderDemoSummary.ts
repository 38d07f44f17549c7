import { renderTable } from '../text/table.ts';
import type { DemoSummary } from './demoSummary.ts';

/** The summary as a person reads it in a terminal: one section per question, tables aligned. */
export function renderDemoSummary(s: DemoSummary): string {
  const mark = (ok: boolean) => (ok ? 'ok' : 'FAILED');
  const seconds = (ms: number | undefined) => `${((ms ?? 0) / 1000).toFixed(1)} s`;
  const sections = [
    `stablebooks demo: seed "${s.seed}", ${s.sizes.intents} intents, ${s.sizes.payouts} claim links: ${s.passed ? 'PASSED' : 'FAILED'}`,
    section(
      'Intents by outcome (entry lines: kind, account, debit + / credit -)',
      renderTable(
        ['outcome', 'route', 'count', 'service status', 'booked', 'entry lines'],
        s.intents.map((r) => [
          r.outcome,
          r.route,
          String(r.count),
          r.statuses.join(','),
          r.ok ? 'ok' : `FAILED: ${r.mismatched.join(', ')}`,
          compactEntries(r.entries),
        ]),
        [2],
      ),
    ),
    section(
      'Confirmed payments by token',
      renderTable(
        ['chain', 'token', 'count', 'requested', 'paid', 'fees', 'net'],
        s.totals.map((t) => [
          String(t.chainId),
          t.symbol,
          String(t.count),
          t.requested,
          t.paid,
          t.fees,
          t.net,
        ]),
        [2, 3, 4, 5, 6],
      ),
    ),
    section(
      'Claim links by outcome',
      renderTable(
        ['outcome', 'count', 'amount', 'booked', 'entry kinds'],
        s.payouts.map((r) => [
          r.outcome,
          String(r.count),
          Object.entries(r.amount)
            .map(([coin, v]) => `${v} ${coin}`)
            .join(', '),
          mark(r.ok),
          [...new Set(r.entries.map((e) => e.split(' ')[0]))].join(', '),
        ]),
        [1],
      ),
    ),
    section(
      'Findings by kind',
      renderTable(
        ['kind', 'severity', 'open', 'resolved'],
        s.findings.map((f) => [f.kind, f.severity, String(f.open), String(f.resolved)]),
        [2, 3],
      ),
    ),
    section(
      'Planted problems',
      renderTable(
        ['problem', 'expected', 'found', ''],
        s.planted.map((p) => [p.problem, p.expected, `${p.found}/${p.count}`, mark(p.ok)]),
        [2],
      ),
    ),
    section(
      'Balance proofs (ledger against balanceOf at a finalized block)',
      renderTable(
        ['chain', 'wallet', 'token', 'ledger', 'on chain', 'result'],
        s.proofs.map((p) => [String(p.chainId), p.wallet, p.symbol, p.ledger, p.chain ?? '-', p.result]),
        [3, 4],
      ),
    ),
    section(
      'Invariants',
      renderTable(
        ['check', '', 'detail'],
        s.invariants.map((i) => [i.name, mark(i.ok), i.detail]),
      ),
    ),
    section(
      'Timings',
      `services ${seconds(s.timings.servicesMs)}, scenario ${seconds(s.timings.driveMs)}, settling ${seconds(s.timings.settleMs)}, ` +
        `reconciliation ${seconds(s.timings.reconMs)}; total ${seconds(s.timings.totalMs)}`,
    ),
    section(
      'Reports',
      (
        [
          ['HTML', s.reports.html],
          ['JSON', s.reports.json],
          ['CSV', s.reports.csv],
          ['Markdown', s.reports.markdown],
        ] as const
      )
        .filter(([, path]) => path)
        .map(([name, path]) => `  ${name.padEnd(9)}${path}`)
        .join('\n'),
    ),
  ];
  return sections.join('\n\n');
}

/** `checkout.confirmed assets:in_transit +` lines as `checkout.confirmed(in_transit+ sales-)`, per entry kind. */
function compactEntries(lines: string[]): string {
  if (lines.length === 0) return 'none';
  const byKind = new Map<string, string[]>();
  for (const line of lines) {
    const [kind = '', account = '', sign = ''] = line.split(' ');
    byKind.set(kind, [...(byKind.get(kind) ?? []), `${account.split(':')[1] ?? account}${sign}`]);
  }
  return [...byKind.entries()].map(([kind, accounts]) => `${kind}(${accounts.join(' ')})`).join(' ');
}

function section(title: string, body: string): string {
  return `${title}\n${body}`;
}
