/**
 * The report as a short Markdown summary for a chat message or a ticket: the headline and the
 * totals, not every row (the CSV and HTML formats have those). GitHub-flavoured tables.
 */
import type { ChainHeadRow, ReconReport } from './reportModel.ts';
import { confirmedTotalsByToken, fiatFigureRows, fiatText, payoutTotalsByOutcome } from './reportTotals.ts';

/** A `|` would end the cell and a newline the row; check details and RPC errors may hold either. */
function cell(value: string | number | null): string {
  if (value === null) return '—';
  return String(value)
    .replaceAll('|', '\\|')
    .replace(/\r?\n|\r/g, ' ');
}

function table(header: string[], rows: (string | number | null)[][], numeric: number[] = []): string {
  const align = header.map((_, i) => (numeric.includes(i) ? '---:' : '---'));
  const line = (cells: (string | number | null)[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(header), `| ${align.join(' | ')} |`, ...rows.map(line)].join('\n');
}

function section(title: string, rows: unknown[], body: () => string): string {
  return `### ${title}\n\n${rows.length === 0 ? '_none_' : body()}`;
}

export function renderMarkdown(report: ReconReport): string {
  const store = report.storeId === null ? 'all stores' : `store ${cell(report.storeId)}`;
  const failedChecks = report.checks.filter((c) => c.status !== 'pass').length;
  const failedProofs = report.balanceProofs.filter((p) => p.result !== 'pass').length;
  const headline = report.passed
    ? `## ✅ PASS: reconciliation ${report.period.from} → ${report.period.to}, ${store}`
    : `## ❌ FAIL: reconciliation ${report.period.from} → ${report.period.to}, ${store}`;
  const summary =
    `${report.checks.length} checks, ${failedChecks} not passed; ` +
    `${report.balanceProofs.length} balance proofs, ${failedProofs} not passed. ` +
    `Generated ${report.generatedAt}.`;

  const totals = confirmedTotalsByToken(report);
  const payouts = payoutTotalsByOutcome(report);
  const { byKind, counts, fullList, samplePerKind } = report.findings;
  const fiat = fiatFigureRows(report);

  return `${[
    headline,
    summary,
    section('Checks', report.checks, () =>
      table(
        ['check', 'layer', 'status', 'count', 'detail'],
        report.checks.map((c) => [c.name, c.layer, c.status.toUpperCase(), c.count, c.detail]),
        [3],
      ),
    ),
    section('Confirmed payments per token', totals, () =>
      table(
        ['chain', 'token', 'count', 'requested', 'paid', 'fees', 'net'],
        totals.map((t) => [t.chainId, t.symbol, t.count, t.requested, t.paid, t.fees, t.net]),
        [2, 3, 4, 5, 6],
      ),
    ),
    section('Payouts by outcome', payouts, () =>
      table(
        ['chain', 'token', 'outcome', 'count', 'amount', 'fees'],
        payouts.map((p) => [p.chainId, p.symbol, p.outcome, p.count, p.amount, p.fees]),
        [3, 4, 5],
      ),
    ),
    section('In the functional currency', fiat, () =>
      [
        table(
          ['store', 'figure', 'accounts', 'tokens', 'value'],
          fiat.map((f) => [f.storeId, f.label, f.accounts.join(', '), f.tokens, fiatText(f)]),
          [4],
        ),
        'Debit-positive, as the accounts carry them (revenue, a credit, is negative); unrealised FX and the FX result: a gain is positive.',
        ...report.valuation.flatMap((v) =>
          v.missingRates.length === 0
            ? []
            : [
                `Store ${cell(v.storeId)}: no ${v.currency} rate for ${v.missingRates
                  .map((m) => `${m.symbol} on ${m.date}`)
                  .join(', ')}.`,
              ],
        ),
      ].join('\n\n'),
    ),
    section('Suspense, unclassified', report.suspense.unclassified, () =>
      table(
        ['store', 'chain', 'token', 'count', 'amount'],
        report.suspense.unclassified.map((u) => [u.storeId, u.chainId, u.symbol, u.count, u.amount]),
        [3, 4],
      ),
    ),
    section('Suspense, classified', report.suspense.classified, () =>
      table(
        ['classification', 'store', 'chain', 'token', 'count', 'amount'],
        report.suspense.classified.map((c) => [
          c.classification,
          c.storeId,
          c.chainId,
          c.symbol,
          c.count,
          c.amount,
        ]),
        [4, 5],
      ),
    ),
    section('Corrections', report.corrections, () =>
      table(
        ['id', 'finding', 'intent', 'store', 'token', 'amount', 'from', 'to', 'by', 'note', 'undone'],
        report.corrections.map((c) => [
          c.id,
          `${c.findingId} (${c.findingKind})`,
          c.intentId,
          c.storeId,
          c.symbol,
          c.amount,
          c.fromAccount,
          c.toAccount,
          c.madeBy,
          c.note,
          c.undoneAt === null ? '—' : `${c.undoneAt} by ${c.undoneBy}: ${c.undoNote}`,
        ]),
        [5],
      ),
    ),
    section('Findings by kind', byKind, () =>
      [
        table(
          ['kind', 'severity', 'new', 'open', 'resolved'],
          byKind.map((k) => [k.kind, k.severity, k.new, k.open, k.resolved]),
          [2, 3, 4],
        ),
        `${counts.new} new, ${counts.open} still open, ${counts.resolved} resolved; every one: ${
          fullList === null ? '`stablebooks findings list`' : cell(fullList)
        } (report.json and report.html carry the first ${samplePerKind} of each kind).`,
      ].join('\n\n'),
    ),
    section('Balance proofs', report.balanceProofs, () =>
      table(
        ['chain', 'token', 'wallet', 'role', 'block', 'ledger', 'on chain', 'result'],
        report.balanceProofs.map((p) => [
          p.chainId,
          p.symbol,
          p.wallet,
          p.role,
          p.blockNumber,
          p.ledgerBalance,
          p.chainBalance ?? (p.error === null ? null : `error: ${p.error}`),
          p.result.toUpperCase(),
        ]),
        [4, 5, 6],
      ),
    ),
    section('Trial balance', report.trialBalance, () =>
      table(
        ['chain', 'token', 'debits', 'credits', 'net'],
        report.trialBalance.map((t) => [t.chainId, t.symbol, t.debits, t.credits, t.net]),
        [2, 3, 4],
      ),
    ),
    section('Ledger hash chain', [1], () =>
      table(
        ['head', 'entries', 'hash', 'last entry', 'sealed at'],
        [
          chainRow('end of period', report.ledgerChain.atPeriodEnd),
          chainRow('report made', report.ledgerChain.atGeneration),
        ],
        [1],
      ),
    ),
  ].join('\n\n')}\n`;
}

/** Check it later with `stablebooks ledger verify --head <entries>:<hash>`. */
function chainRow(label: string, h: ChainHeadRow | null): (string | null)[] {
  return h === null
    ? [label, null, null, null, null]
    : [label, h.seq, `\`${h.hash}\``, h.entryId, h.sealedAt];
}
