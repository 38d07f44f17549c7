import { seededRandom } from '../seededRandom.ts';
import type { CheckoutStatusName } from '../svc/models/checkoutStatus.ts';
import type { CurrencyCode } from '../svc/models/currency.ts';

/**
 * The demo's scenario: a seeded, pure plan of what happens to every intent and claim link, so
 * that the same seed gives the same amounts, outcomes and planted problems (driveScenario.ts
 * carries it out against the sandbox; demoSummary.ts checks what the daemon made of it).
 */

/** How the service settles an intent, and so what the books must show (docs/accounting.md). */
export type IntentOutcome =
  /** Paid exactly: rule 1, then rule 2 once final. */
  | 'exact'
  /** Paid less, and the service confirmed it anyway: rule 1 with a sales shortfall; finding underpaid. */
  | 'underpaid_accepted'
  /** Paid less, the service answered UNDERPAID and sent it back: no entry. */
  | 'underpaid_returned'
  /** Paid more: rule 1 with a customer overpayment; finding overpaid. */
  | 'overpaid'
  /** KYT screening rejected the funds: REJECTED, no entry. */
  | 'kyt_rejected'
  /** Held for manual review: MANUAL_OPERATION, no entry; finding stuck_intent once old. */
  | 'manual_review'
  /** Never paid: TIMEOUT after the service's inactivity timeout, no entry. */
  | 'timed_out'
  /** The service reports net_income_amount ≠ paid − fee: finding fee_arithmetic_mismatch. */
  | 'fee_mismatch';

/** What happens to the intent's webhook on the way (the sandbox's delivery faults). */
export type WebhookFault = 'none' | 'dropped' | 'duplicated' | 'reordered' | 'delayed';

export type Pricing =
  | { kind: 'coin'; coin: 'USDT' | 'USDC'; amountCents: bigint }
  | {
      kind: 'fiat';
      currency: CurrencyCode;
      amountCents: bigint /** The settlement coin. */;
      coin: 'USDT' | 'USDC';
    };

export interface PlannedIntent {
  /** demo-001 …: the order id, and how the summary names planted problems. */
  key: string;
  pricing: Pricing;
  outcome: IntentOutcome;
  route: 'temp_wallet' | 'direct';
  webhook: WebhookFault;
  /**
   * Created through stablebooks (tracked and polled from the start) or at the service directly
   * by another system (stablebooks learns it from the webhook).
   */
  createdBy: 'stablebooks' | 'elsewhere';
  /** The payment whose block a reorg replaces (it lands again, and is proven again). */
  reorged: boolean;
}

export type PayoutOutcome = 'claimed' | 'cancelled' | 'expired';

export interface PlannedPayout {
  key: string;
  /** Token units, a decimal string. */
  amount: string;
  coin: 'USDT' | 'USDC';
  outcome: PayoutOutcome;
}

export interface DemoScenario {
  seed: string;
  intents: PlannedIntent[];
  payouts: PlannedPayout[];
  /** API faults injected while the daemon polls and fetches: 40001s, then 500s. */
  apiFaults: { rateLimited: number; serverErrors: number };
  /** The chain's own surprises: a stranger paying the merchant wallet, a token nobody accepts. */
  strangerTransfer: { coin: 'USDT' | 'USDC'; amount: string };
  unacceptedTokenTransfer: { amount: string };
}

/** The service status each outcome ends in, once the clock has moved past every timeout. */
export const FINAL_STATUS: Record<IntentOutcome, CheckoutStatusName> = {
  exact: 'CONFIRMED',
  underpaid_accepted: 'CONFIRMED',
  overpaid: 'CONFIRMED',
  fee_mismatch: 'CONFIRMED',
  underpaid_returned: 'UNDERPAID',
  kyt_rejected: 'REJECTED',
  manual_review: 'MANUAL_OPERATION',
  timed_out: 'TIMEOUT',
};

export const DEFAULT_INTENTS = 200;
export const DEFAULT_PAYOUTS = 20;

/** One claim link per outcome at least. */
export const MIN_PAYOUTS = 3;

/** Currencies near the dollar, so every amount clears the service's 0.1-coin floor. */
const FIAT: CurrencyCode[] = ['USD', 'EUR', 'GBP', 'CHF', 'CAD'];

/**
 * The outcomes that must appear whatever the size, each a planted problem or a path of the
 * posting rules, and then the weights of the rest (most payments simply succeed).
 */
const FIXED: Array<Pick<PlannedIntent, 'outcome' | 'webhook' | 'route'> & { reorged?: true }> = [
  // The payment whose block the demo's reorg replaces.
  { outcome: 'exact', webhook: 'none', route: 'direct', reorged: true },
  { outcome: 'exact', webhook: 'dropped', route: 'temp_wallet' },
  { outcome: 'exact', webhook: 'dropped', route: 'direct' },
  { outcome: 'exact', webhook: 'duplicated', route: 'temp_wallet' },
  { outcome: 'exact', webhook: 'duplicated', route: 'direct' },
  { outcome: 'exact', webhook: 'reordered', route: 'temp_wallet' },
  { outcome: 'exact', webhook: 'reordered', route: 'temp_wallet' },
  { outcome: 'exact', webhook: 'reordered', route: 'direct' },
  { outcome: 'exact', webhook: 'delayed', route: 'temp_wallet' },
  { outcome: 'fee_mismatch', webhook: 'none', route: 'temp_wallet' },
  { outcome: 'underpaid_accepted', webhook: 'none', route: 'temp_wallet' },
  { outcome: 'underpaid_returned', webhook: 'none', route: 'temp_wallet' },
  { outcome: 'overpaid', webhook: 'none', route: 'direct' },
  { outcome: 'kyt_rejected', webhook: 'none', route: 'temp_wallet' },
  { outcome: 'manual_review', webhook: 'none', route: 'temp_wallet' },
  { outcome: 'timed_out', webhook: 'none', route: 'temp_wallet' },
];

/** Every planted problem has its intent: the smallest scenario is exactly these. */
export const MIN_INTENTS = FIXED.length;

const WEIGHTS: Array<[IntentOutcome, number]> = [
  ['exact', 78],
  ['underpaid_accepted', 4],
  ['underpaid_returned', 3],
  ['overpaid', 5],
  ['kyt_rejected', 3],
  ['manual_review', 1],
  ['timed_out', 6],
];

/** The outcome whose slice of the weights `r` (0 <= r < total) falls in. */
function weighted(r: number): IntentOutcome {
  let rest = r;
  for (const [outcome, weight] of WEIGHTS) {
    if (rest < weight) return outcome;
    rest -= weight;
  }
  return 'exact';
}

export class ScenarioSizeError extends Error {}

export function planScenario(options: { seed: string; intents: number; payouts: number }): DemoScenario {
  const { seed } = options;
  if (!Number.isInteger(options.intents) || options.intents < MIN_INTENTS || options.intents > 5000)
    throw new ScenarioSizeError(`--intents must be a whole number from ${MIN_INTENTS} to 5000`);
  if (!Number.isInteger(options.payouts) || options.payouts < MIN_PAYOUTS || options.payouts > 500)
    throw new ScenarioSizeError(`--payouts must be a whole number from ${MIN_PAYOUTS} to 500`);
  const random = seededRandom(`${seed}:intents`);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;

  const shapes = [...FIXED];
  const total = WEIGHTS.reduce((s, [, w]) => s + w, 0);
  while (shapes.length < options.intents) {
    const outcome = weighted(random() * total);
    // KYT screening and manual review only happen on the temporary-wallet route.
    const route =
      outcome === 'kyt_rejected' || outcome === 'manual_review' || random() < 0.7 ? 'temp_wallet' : 'direct';
    shapes.push({ outcome, webhook: 'none', route });
  }
  // The planted problems sit among the ordinary payments, not at the front.
  for (let i = shapes.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [shapes[i], shapes[j]] = [shapes[j] as (typeof shapes)[number], shapes[i] as (typeof shapes)[number]];
  }
  const intents = shapes.map((shape, i): PlannedIntent => {
    const fiat = random() < 0.45;
    const amountCents = BigInt(500 + Math.floor(random() * 49_500));
    const pricing: Pricing = fiat
      ? { kind: 'fiat', currency: pick(FIAT), amountCents, coin: random() < 0.5 ? 'USDT' : 'USDC' }
      : { kind: 'coin', coin: random() < 0.5 ? 'USDT' : 'USDC', amountCents };
    // A dropped webhook on an intent nobody registered would leave stablebooks blind to it:
    // those, like every planted fault, are created through stablebooks.
    const createdBy =
      shape.webhook === 'none' && shape.outcome === 'exact' && random() < 0.2 ? 'elsewhere' : 'stablebooks';
    const reorged = shape.reorged === true;
    return {
      key: `demo-${String(i + 1).padStart(3, '0')}`,
      pricing,
      ...shape,
      createdBy: reorged ? 'stablebooks' : createdBy,
      reorged,
    };
  });

  const payoutRandom = seededRandom(`${seed}:payouts`);
  const payouts = Array.from({ length: options.payouts }, (_, i): PlannedPayout => {
    // The first three cover each outcome; then about half are claimed, the rest cancelled or left to expire.
    const r = payoutRandom();
    const outcome: PayoutOutcome =
      i < 3
        ? (['claimed', 'cancelled', 'expired'] as const)[i]!
        : r < 0.5
          ? 'claimed'
          : r < 0.75
            ? 'cancelled'
            : 'expired';
    const cents = 100 + Math.floor(payoutRandom() * 4_900);
    return {
      key: `payout-${String(i + 1).padStart(3, '0')}`,
      amount: `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`,
      coin: payoutRandom() < 0.6 ? 'USDT' : 'USDC',
      outcome,
    };
  });

  return {
    seed,
    intents,
    payouts,
    apiFaults: { rateLimited: 6, serverErrors: 4 },
    strangerTransfer: { coin: 'USDC', amount: '7.5' },
    unacceptedTokenTransfer: { amount: '25' },
  };
}
