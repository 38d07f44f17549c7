import { StablebooksError } from '../errors/stablebooksError.ts';

/**
 * A request about an item in suspense that cannot be carried out as asked: no such item, a name
 * that matches several, an item already classified otherwise, not classified, or a classification
 * that cannot explain it. One line for a person; the transaction is rolled back, nothing changed.
 */
export class SuspenseItemError extends StablebooksError {
  override name = 'SuspenseItemError';
  readonly retryable = false;
  constructor(
    readonly reason:
      | 'bad_reference'
      | 'not_found'
      | 'ambiguous'
      | 'already_classified'
      | 'not_classified'
      | 'wrong_direction'
      | 'bad_input',
    message: string,
  ) {
    super(message);
  }
}
