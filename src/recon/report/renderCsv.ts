/**
 * The report as CSV files, one per table (docs/report-schema.md lists them with their columns),
 * for spreadsheets and accounting imports.
 *
 * RFC 4180 quoting, LF line endings (every importer we target accepts them, and they diff cleanly),
 * a header row even when a table is empty, amounts exactly as the model's decimal strings.
 *
 * Text that comes from outside (finding details, reference ids, RPC errors) could start with `=`,
 * `+`, `-`, `@`, tab or CR, which a spreadsheet runs as a formula (CSV injection). Such a field gets
 * a leading apostrophe. Numbers are left alone: "-1.5" is a negative amount, not a formula.
 */

import type { FindingRow } from '../../findings/finding.ts';
import type { ReconReport } from './reportModel.ts';
import { fiatFigureRows } from './reportTotals.ts';

export interface CsvFile {
  name: string;
  content: string;
}

export type Cell = string | number | boolean | null;

const NUMERIC_RE = /^-?\d+(?:\.\d+)?$/;
const FORMULA_START_RE = /^[=+\-@\t\r]/;

function guardFormula(text: string): string {
  return FORMULA_START_RE.test(text) && !NUMERIC_RE.test(text) ? `'${text}` : text;
}

export function csvField(cell: Cell): string {
  const text = cell === null ? '' : guardFormula(String(cell));
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function csv(name: string, header: string[], rows: Cell[][]): CsvFile {
  const lines = [header, ...rows].map((row) => row.map(csvField).join(','));
  return { name, content: `${lines.join('\n')}\n` };
}

const DIFFERENCE_HEADER = [
  'intent_id',
  'store_id',
  'chain_id',
  'symbol',
  'requested',
  'paid',
  'difference',
  'confirmed_at',
];

function differenceRows(rows: ReconReport['payments']['underpaid']): Cell[][] {
  return rows.map((r) => [
    r.intentId,
    r.storeId,
    r.chainId,
    r.symbol,
    r.requested,
    r.paid,
    r.difference,
    r.confirmedAt,
  ]);
}

export const FINDINGS_CSV_HEADER = [
  'list',
  'id',
  'kind',
  'severity',
  'store_id',
  'ref_type',
  'ref_id',
  'first_seen_at',
  'last_seen_at',
  'resolved_at',
  'acked_at',
  'ack_note',
  'details',
];

/** The header line of findings.csv. */
export function findingsCsvHeader(): string {
  return `${FINDINGS_CSV_HEADER.map(csvField).join(',')}\n`;
}

/**
 * One line of findings.csv. The file is written row by row from the database
 * (writeReportFiles.ts), not from the report, which carries only a sample.
 */
export function findingsCsvLine(list: 'new' | 'open' | 'resolved', f: FindingRow): string {
  const cells: Cell[] = [
    list,
    f.id,
    f.kind,
    f.severity,
    f.storeId,
    f.refType,
    f.refId,
    f.firstSeenAt,
    f.lastSeenAt,
    f.resolvedAt,
    f.ackedAt,
    f.ackNote,
    JSON.stringify(f.details),
  ];
  return `${cells.map(csvField).join(',')}\n`;
}

/** Lines of findings.csv for findings of one list. */
export function findingsCsvLines(list: 'new' | 'open' | 'resolved', rows: FindingRow[]): string {
  return rows.map((f) => findingsCsvLine(list, f)).join('');
}

/** Every table but findings.csv, which is streamed (findingsCsvHeader, findingsCsvLines). */
export function renderCsv(report: ReconReport): CsvFile[] {
  const { payments } = report;
  return [
    csv(
      'accounts.csv',
      [
        'store_id',
        'code',
        'kind',
        'type',
        'chain_id',
        'symbol',
        'token',
        'decimals',
        'opening',
        'debits',
        'credits',
        'closing',
      ],
      report.accounts.map((a) => [
        a.storeId,
        a.code,
        a.kind,
        a.type,
        a.chainId,
        a.symbol,
        a.token,
        a.decimals,
        a.opening,
        a.debits,
        a.credits,
        a.closing,
      ]),
    ),
    csv(
      'payments_by_status.csv',
      ['store_id', 'chain_id', 'symbol', 'status', 'count', 'requested', 'paid', 'fees', 'net'],
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
    ),
    csv(
      'payments_fiat.csv',
      ['currency', 'status', 'count', 'amount'],
      payments.fiat.map((f) => [f.currency, f.status, f.count, f.amount]),
    ),
    csv(
      'payments_per_day.csv',
      ['day', 'chain_id', 'symbol', 'count', 'paid', 'fees', 'net'],
      payments.perDay.map((d) => [d.day, d.chainId, d.symbol, d.count, d.paid, d.fees, d.net]),
    ),
    csv('underpaid.csv', DIFFERENCE_HEADER, differenceRows(payments.underpaid)),
    csv('overpaid.csv', DIFFERENCE_HEADER, differenceRows(payments.overpaid)),
    csv(
      'payouts.csv',
      ['store_id', 'chain_id', 'symbol', 'outcome', 'count', 'amount', 'fees'],
      report.payouts.map((p) => [p.storeId, p.chainId, p.symbol, p.outcome, p.count, p.amount, p.fees]),
    ),
    csv(
      'valuation.csv',
      ['store_id', 'currency', 'figure', 'accounts', 'tokens', 'value', 'unvalued_postings'],
      // "unvalued", never an empty cell a spreadsheet would add as 0 (as the CSV export does).
      fiatFigureRows(report).map((f) => [
        f.storeId,
        f.currency,
        f.figure,
        f.accounts.join(' '),
        f.tokens,
        f.value ?? 'unvalued',
        f.unvalued,
      ]),
    ),
    csv(
      'balance_proofs.csv',
      [
        'chain_id',
        'symbol',
        'token',
        'wallet',
        'role',
        'block_number',
        'ledger_balance',
        'chain_balance',
        'result',
        'error',
        'proved_at',
      ],
      report.balanceProofs.map((p) => [
        p.chainId,
        p.symbol,
        p.token,
        p.wallet,
        p.role,
        p.blockNumber,
        p.ledgerBalance,
        p.chainBalance,
        p.result,
        p.error,
        p.provedAt,
      ]),
    ),
    csv(
      'trial_balance.csv',
      ['chain_id', 'symbol', 'token', 'debits', 'credits', 'net'],
      report.trialBalance.map((t) => [t.chainId, t.symbol, t.token, t.debits, t.credits, t.net]),
    ),
    csv(
      'ledger_chain.csv',
      ['head', 'seq', 'hash', 'entry_id', 'sealed_at'],
      (
        [
          ['period_end', report.ledgerChain.atPeriodEnd],
          ['generated', report.ledgerChain.atGeneration],
        ] as const
      ).flatMap(([head, h]) => (h === null ? [] : [[head, h.seq, h.hash, h.entryId, h.sealedAt]])),
    ),
    csv(
      'checks.csv',
      ['name', 'layer', 'status', 'count', 'detail'],
      report.checks.map((c) => [c.name, c.layer, c.status, c.count, c.detail]),
    ),
  ];
}
