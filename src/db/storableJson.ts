/**
 * PostgreSQL's text and jsonb cannot hold U+0000 nor a lone UTF-16 surrogate, both of which a
 * JSON string from the service may carry (JSON.parse accepts `\u0000` and `\ud800`). Writing one
 * fails the whole transaction, and retrying cannot help: the intent or finding would never be
 * recorded. Such characters become U+FFFD; the exact bytes stay in the inbox row (bytea).
 */
export function storableText(text: string): string {
  if (!text.includes('\u0000') && isWellFormed(text)) return text;
  return toWellFormed(text).replaceAll('\u0000', '\uFFFD');
}

/** JSON text for a jsonb parameter: bigints as decimal strings, strings and keys made storable. */
/**
 * Error text kept on a row or in a finding: enough to read, never a flood, and storable (a
 * service's own message may carry what PostgreSQL refuses, which would fail the row for ever).
 */
export function storableExcerpt(text: string, max = 500): string {
  return storableText(text.length > max ? `${text.slice(0, max)}...` : text);
}

export function toJsonb(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'string') return storableText(v);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.some((k) => storableText(k) !== k)) {
        return Object.fromEntries(Object.entries(v).map(([k, x]) => [storableText(k), x]));
      }
    }
    return v;
  });
}

/** A flat record whose string fields are made storable (see storableText); itself when all are. */
export function storableFields<T extends object>(record: T): T {
  const entries = Object.entries(record);
  if (entries.every(([, v]) => typeof v !== 'string' || storableText(v) === v)) return record;
  return Object.fromEntries(entries.map(([k, v]) => [k, typeof v === 'string' ? storableText(v) : v])) as T;
}

// ES2024 string methods, in Node 20 but not in the ES2023 lib this project compiles against.
const isWellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();
const toWellFormed = (s: string): string => (s as unknown as { toWellFormed(): string }).toWellFormed();
