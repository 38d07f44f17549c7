import { StablebooksError } from '../errors/stablebooksError.ts';
/**
 * Errors of the payouts domain. Each message is one line that tells the reader what to do, and
 * none carries a claim URL or token (they never leave payouts/secretBox.ts in clear, except to
 * `showPayout` with reveal).
 */

/** The request breaks a rule we can check before anything is recorded or sent. */
export class PayoutInputError extends StablebooksError {
  override name = 'PayoutInputError';
  readonly retryable = false;
}

/** A reference_id already recorded for this store with other parameters; nothing was sent. */
export class PayoutConflictError extends StablebooksError {
  override name = 'PayoutConflictError';
  readonly retryable = false;
  constructor(
    readonly payoutId: string,
    readonly referenceId: string,
    readonly conflicts: Array<{ field: string; recorded: string | null; given: string | null }>,
  ) {
    super(
      `reference_id ${referenceId} is already payout ${payoutId} with other parameters: ` +
        conflicts
          .map((c) => `${c.field} was ${c.recorded ?? '(none)'}, now ${c.given ?? '(none)'}`)
          .join('; ') +
        '; use the same parameters to resume it, or a new --reference-id for a new payout',
    );
  }
}

export class PayoutNotFoundError extends StablebooksError {
  override name = 'PayoutNotFoundError';
  readonly retryable = false;
  constructor(readonly idOrClaimLinkId: string) {
    super(
      `no payout or claim link ${idOrClaimLinkId} is recorded (payouts are created with: stablebooks payouts create)`,
    );
  }
}

/** The link is not in a state that allows what was asked (cancel of a claimed link, ...). */
export class PayoutStateError extends StablebooksError {
  override name = 'PayoutStateError';
  readonly retryable = false;
  constructor(
    message: string,
    readonly status: string | null,
  ) {
    super(message);
  }
}

/**
 * Create did not end in a funded link. `failed`: the service refused, nothing was paid; fix the
 * cause and run the same create again. `unknown`: the call may have reached the service; run the
 * same create again (same reference_id), which cannot pay twice, to learn the outcome.
 */
export class PayoutCreateError extends StablebooksError {
  override name = 'PayoutCreateError';
  readonly retryable: boolean;
  constructor(
    readonly outcome: 'failed' | 'unknown',
    readonly payoutId: string,
    readonly referenceId: string,
    readonly attempts: number,
    detail: string,
    options: { cause?: unknown } = {},
  ) {
    super(
      outcome === 'unknown'
        ? `payout ${payoutId}: outcome unknown after ${attempts} attempt(s) (${detail}); run the same command again with reference_id ${referenceId}: it resumes the payout and cannot pay twice`
        : `payout ${payoutId}: the service refused it (${detail}); nothing was paid`,
      options,
    );
    this.retryable = outcome === 'unknown';
  }
}
