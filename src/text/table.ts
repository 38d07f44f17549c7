import { terminalSafe } from './terminalSafe.ts';

/**
 * A plain text table: columns padded to their widest cell; right-aligned where asked (amounts).
 * Every cell is terminalSafe (no line break or tab either: one row is one line) before the widths
 * are measured, so an escaped cell still lines up.
 */
export function renderTable(headers: string[], rows: string[][], rightAligned: number[] = []): string {
  const safeHeaders = headers.map((h) => terminalSafe(h));
  const safeRows = rows.map((r) => r.map((c) => terminalSafe(c)));
  const widths = safeHeaders.map((h, i) => Math.max(h.length, ...safeRows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (rightAligned.includes(i) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(safeHeaders), line(widths.map((w) => '-'.repeat(w))), ...safeRows.map(line)].join('\n');
}
