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

/**
 * A posting in a token whose decimals differ from those its account was created with: the
 * registry (CHAINS_FILE) changed the token's decimals, so the amounts are counted in another unit
 * than the account's. Never retried: a person fixes the registry. The message says what to do too.
 */
export class AccountDecimalsError extends StablebooksError {
  override name = 'AccountDecimalsError';
  readonly retryable = false;
  constructor(
    readonly accountCode: string,
    readonly accountDecimals: number,
    readonly tokenDecimals: number,
    asset: string,
  ) {
    const action =
      `CHAINS_FILE changed the decimals of token ${asset} since the account was created: set them back to ` +
      `${accountDecimals} in CHAINS_FILE (stablebooks doctor compares them with decimals() on chain) and restart`;
    super(
      `ledger: account ${accountCode} was created for ${accountDecimals} decimals, but this posting's token ` +
        `has ${tokenDecimals}; nothing was posted; ${action}`,
      { action },
    );
  }
}
