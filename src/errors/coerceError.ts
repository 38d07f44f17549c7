/**
 * Anything thrown, as an Error: JavaScript lets code throw strings, numbers and plain objects, and
 * every catch that reports or wraps one normalises it here, once.
 */
export function coerceError(err: unknown): Error {
  if (err instanceof Error) return err;
  if (typeof err === 'object' && err !== null && typeof (err as { message?: unknown }).message === 'string')
    return new Error((err as { message: string }).message);
  return new Error(String(err));
}
