import type { z } from 'zod';

/**
 * A control API body: JSON (an empty body reads as {}) checked by `schema`; otherwise the first
 * problem as one line, for a 400.
 */
export function parseControlBody<S extends z.ZodType>(
  schema: S,
  bytes: Buffer,
): { ok: true; data: z.output<S> } | { ok: false; error: string } {
  let body: unknown = {};
  const text = bytes.toString('utf8').trim();
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      return { ok: false, error: 'body is not valid JSON' };
    }
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, error: `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}` };
  }
  return { ok: true, data: parsed.data };
}
