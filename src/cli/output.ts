/** Prints a command's result: one JSON document with --json, else the human text. */
export function printResult<T>(json: boolean | undefined, value: T, asText: (v: T) => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, jsonReplacer, 2)}\n` : `${asText(value)}\n`);
}

/** bigint amounts print as decimal strings, never as lossy numbers. */
export function jsonReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
