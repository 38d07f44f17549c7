import { coerceError } from '../errors/coerceError.ts';
import { redactClaimLinks } from '../logging/logger.ts';
import { SvcApiError } from '../svc/errors.ts';

/**
 * One line for `last_error`, logs and the CLI: the error's message, the human reason of a 50103
 * (which says, for example, how short the custody balance is), never a claim URL or token.
 */
export function describeError(err: unknown): string {
  let text = coerceError(err).message;
  if (err instanceof SvcApiError && typeof err.details.reason === 'string') {
    text += ` (reason: ${err.details.reason})`;
  }
  const line = redactClaimLinks(text.split('\n')[0] ?? '');
  return line.length > 500 ? `${line.slice(0, 497)}...` : line;
}
