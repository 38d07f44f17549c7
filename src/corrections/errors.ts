import { StablebooksError } from '../errors/stablebooksError.ts';

/**
 * A correction that cannot be made as asked: no such finding or correction, a finding of a kind
 * no correction settles, nothing left to move, an account that does not fit, an amount that is no
 * decimal or above the leftover, an empty note. One line for a person; the transaction is rolled
 * back, nothing changed.
 */
export class CorrectionError extends StablebooksError {
  override name = 'CorrectionError';
  readonly retryable = false;
  constructor(
    readonly reason: 'not_found' | 'wrong_kind' | 'nothing_left' | 'bad_account' | 'bad_amount' | 'bad_input',
    message: string,
  ) {
    super(message);
  }
}

/** `value` trimmed, or a CorrectionError naming `option` when it is empty or too long. */
export function checkedText(option: string, value: string, max: number): string {
  const text = value.trim();
  if (text.length === 0) throw new CorrectionError('bad_input', `${option}: must say something`);
  if (text.length > max) throw new CorrectionError('bad_input', `${option}: at most ${max} characters`);
  return text;
}
