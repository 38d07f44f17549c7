import type { z } from 'zod';

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * Validates a request's path params or query string with its schema. The reason of a failure is
 * one line that names the parameter first (`limit: must be a whole number from 1 to 500`), and
 * says so when a parameter is unknown or given twice (a misspelt filter is an error, never a
 * silently wider answer), and refuses a NUL character in any parameter.
 */
export function parseInput<S extends z.ZodType>(schema: S, raw: unknown): Parsed<z.output<S>> {
  const given = (raw ?? {}) as Record<string, unknown>;
  // Before any schema: no value holding U+0000 reaches a query (PostgreSQL refuses it in text),
  // whichever parameter a route adds later.
  for (const [name, value] of Object.entries(given)) {
    if ([value].flat().some((v) => typeof v === 'string' && v.includes('\u0000')))
      return { ok: false, reason: `${name}: must not hold a NUL character` };
  }
  const result = schema.safeParse(raw ?? {});
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  if (!issue) return { ok: false, reason: 'invalid request' };
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys;
    return {
      ok: false,
      reason: `${keys.join(', ')}: unknown parameter${keys.length > 1 ? 's' : ''}`,
    };
  }
  const name = issue.path.map(String).join('.');
  if (name && Array.isArray(given[name])) return { ok: false, reason: `${name}: given more than once` };
  return { ok: false, reason: name ? `${name}: ${issue.message}` : issue.message };
}
