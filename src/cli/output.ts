import { terminalSafe, terminalSafeJson } from '../text/terminalSafe.ts';

/**
 * Prints a command's result: one JSON document with --json, else the human text. Both go through
 * terminalSafe, so data from the database (ref ids, memos, notes) cannot drive the terminal; a
 * table's cells are already escaped by renderTable, which this leaves as they are.
 */
export function printResult<T>(json: boolean | undefined, value: T, asText: (v: T) => string): void {
  process.stdout.write(
    json
      ? `${terminalSafeJson(JSON.stringify(value, jsonReplacer, 2))}\n`
      : `${terminalSafe(asText(value), { newlines: true })}\n`,
  );
}

/** One line to stderr, `stablebooks: ` first: errors, warnings and progress, escaped like results. */
export function printNote(line: string): void {
  process.stderr.write(`stablebooks: ${terminalSafe(line)}\n`);
}

/** bigint amounts print as decimal strings, never as lossy numbers. */
export function jsonReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
