import { StablebooksError } from '../errors/stablebooksError.ts';
/** Posting the same idempotency key with different content: a bug or a changed fact, never retried. */
export class IdempotencyConflictError extends StablebooksError {
  override name = 'IdempotencyConflictError';
  readonly retryable = false;
  constructor(
    readonly idempotencyKey: string,
    readonly existingEntryId: bigint,
  ) {
    super(
      `ledger: idempotency key ${idempotencyKey} was already posted (entry ${existingEntryId}) with different content; ` +
        'a changed fact needs a reversal and a new key, not a re-post',
    );
  }
}

/** An entry draft that can never be posted (unbalanced, a zero line, fewer than two lines). */
export class InvalidEntryError extends StablebooksError {
  override name = 'InvalidEntryError';
  readonly retryable = false;
}

/** reverseEntry was asked to reverse an entry that does not exist. */
export class EntryNotFoundError extends StablebooksError {
  override name = 'EntryNotFoundError';
  readonly retryable = false;
}
