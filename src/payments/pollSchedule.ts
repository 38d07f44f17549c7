import { CheckoutStatus, isTerminalCheckoutStatus } from '../svc/models/checkoutStatus.ts';

/**
 * When to poll an intent's status next (docs/accounting.md, "Payments, payouts and the chain"): fast while money is moving, slower
 * while the buyer has not paid, never once the intent is settled. Jitter spreads the polls of
 * intents created together. `scale` shortens every interval (tests and the demo run it faster).
 */
export interface PollScheduleInput {
  status: number | null;
  /** How long the intent has been tracked, in ms. */
  trackedForMs: number;
  /** A terminal status already in the books, by a webhook or a poll (ApplyResult.settled). */
  settled: boolean;
  random: () => number;
  scale?: number;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;

export function nextPollDelayMs(input: PollScheduleInput): number | null {
  if (input.settled) return null;
  // Failures are settled when recorded; only CONFIRMED can wait to be booked.
  if (
    input.status !== null &&
    input.status !== CheckoutStatus.CONFIRMED &&
    isTerminalCheckoutStatus(input.status as CheckoutStatus)
  )
    return null;
  let base: number;
  switch (input.status) {
    case CheckoutStatus.CONFIRMED:
      // Confirmed but not booked yet (no amounts, unknown token, an unbookable amount): what can
      // heal it is a later answer or a configuration fix, neither urgent.
      base = 10 * MINUTE;
      break;
    case CheckoutStatus.ON_CHAIN:
    case CheckoutStatus.TEMP_WALLET_RECEIVED:
      base = 10 * SECOND;
      break;
    case CheckoutStatus.SEND_BACK:
    case CheckoutStatus.MANUAL_OPERATION:
      base = 5 * MINUTE;
      break;
    default:
      // CREATED, VIEWED or not yet known: every 30 s for ten minutes, then every 2 min for the
      // first hour, then every 10 min.
      base =
        input.trackedForMs < 10 * MINUTE
          ? 30 * SECOND
          : input.trackedForMs < 60 * MINUTE
            ? 2 * MINUTE
            : 10 * MINUTE;
  }
  // +-20% jitter.
  const jittered = base * (0.8 + 0.4 * input.random());
  return Math.max(1, Math.round(jittered * (input.scale ?? 1)));
}
