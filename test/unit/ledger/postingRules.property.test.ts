/**
 * Seeded random simulation of the posting rules (STYLE.md, "the idea of TigerBeetle's VOPR"):
 * random payments, claim links, failures, reorgs and unmatched transfers in both 6- and
 * 18-decimal tokens become facts; the facts are interleaved at random (each scenario keeps its own
 * order) and some are delivered twice; an in-memory poster keeps one entry per idempotency key.
 * Then every entry must balance per asset with no zero line, and the trial balance must follow the
 * rule arithmetic computed independently from the scenarios.
 *
 * A failure prints fast-check's seed and path; replay it with
 *   FC_SEED=<seed> FC_PATH=<path> npx vitest run test/unit/ledger/postingRules.property.test.ts
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FindingDraft } from '../../../src/findings/finding.ts';
import { type AccountKind, assetOf, type Token } from '../../../src/ledger/accounts.ts';
import type { EntryDraft, RuleOutcome } from '../../../src/ledger/entryDraft.ts';
import { isBalanced, sumByAsset } from '../../../src/ledger/rules/balanceCheck.ts';
import type { ChainTransferFact } from '../../../src/ledger/rules/chainTransferFact.ts';
import {
  type ChainEntryRole,
  chainEntryKey,
  paymentProven,
  reorgReversal,
  unmatchedTransfer,
} from '../../../src/ledger/rules/chainTransferRules.ts';
import {
  CHECKOUT_FAILURE_STATUSES,
  type CheckoutFailureStatus,
  checkoutConfirmed,
  checkoutConfirmedKey,
  checkoutTerminalFailure,
} from '../../../src/ledger/rules/checkoutRules.ts';
import {
  CLAIM_LINK_EXPIRY_MS,
  claimLinkCancelled,
  claimLinkClaimed,
  claimLinkExpired,
  claimLinkFunded,
  claimLinkFundingProven,
  claimLinkRefunded,
} from '../../../src/ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { USDC_BASE, USDT_BNB } from '../../helpers/tokens.ts';
import {
  balanceOf,
  CUSTODY_WALLET,
  hash,
  MERCHANT_WALLET,
  POOL_WALLET,
  reversalOf,
  STORE,
  STRANGER,
  T0,
  trialBalance,
} from './ledgerFixtures.ts';

const TOKENS = [USDC_BASE, USDT_BNB] as const;
const FAKE_TOKEN = '0x9999999999999999999999999999999999999999' as const;

/** fast-check's own seed and path from the environment, to replay a reported failure. */
function replayParameters(): { seed?: number; path?: string } {
  const seed = process.env.FC_SEED;
  const path = process.env.FC_PATH;
  return {
    ...(seed === undefined ? {} : { seed: Number(seed) }),
    ...(path === undefined ? {} : { path }),
  };
}

// ---- scenarios --------------------------------------------------------------------------------

interface Payment {
  type: 'payment';
  token: Token;
  R: bigint;
  P: bigint;
  F: bigint;
  /** The service reports N' != P - F; `proven`: the chain later proves P - F. */
  mismatch: { reportedN: bigint; proven: boolean } | null;
  reorg: boolean;
  /** CONFIRMED, then a failure status before the chain proof: rule 4 reverses rule 1. */
  failAfterConfirm: CheckoutFailureStatus | null;
}

interface FailedIntent {
  type: 'failed_intent';
  status: CheckoutFailureStatus;
}

interface Link {
  type: 'link';
  token: Token;
  A: bigint;
  /** What left custody at funding. */
  X: bigint;
  outcome: 'open' | 'claimed' | 'cancel' | 'expiry';
  /** Refund value for cancel/expiry, or null while it has not arrived. */
  refund: bigint | null;
  reorgRefund: boolean;
  expiryDelayMs: number;
}

interface Unmatched {
  type: 'unmatched';
  token: Token;
  accepted: boolean;
  role: 'merchant' | 'custody';
  direction: 'in' | 'out';
  amount: bigint;
}

type Scenario = Payment | FailedIntent | Link | Unmatched;

const unit = (token: Token) => 10n ** BigInt(token.decimals);

/** Amounts from `min` base units up to ten million tokens; fast-check biases towards small and edge values. */
const amountOf = (token: Token, min = 0n) => fc.bigInt({ min, max: 10_000_000n * unit(token) });

const paymentArb: fc.Arbitrary<Payment> = fc.constantFrom(...TOKENS).chain((token) =>
  fc
    .record({
      R: amountOf(token, 1n),
      paid: amountOf(token),
      exact: fc.boolean(),
      direct: fc.boolean(),
      feeShare: fc.bigInt({ min: 0n, max: 1000n }),
      mismatch: fc.option(
        fc.record({ k: fc.bigInt({ min: 1n, max: unit(token) }), down: fc.boolean(), proven: fc.boolean() }),
        { freq: 3 },
      ),
      reorg: fc.boolean(),
      fail: fc.option(fc.constantFrom(...CHECKOUT_FAILURE_STATUSES), { freq: 6 }),
    })
    .map(({ R, paid, exact, direct, feeShare, mismatch, reorg, fail }): Payment => {
      const P = exact ? R : paid;
      const F = direct ? 0n : (P * feeShare) / 1000n;
      const N = P - F;
      return {
        type: 'payment',
        token,
        R,
        P,
        F,
        mismatch:
          mismatch === null
            ? null
            : {
                reportedN: mismatch.down && N >= mismatch.k ? N - mismatch.k : N + mismatch.k,
                proven: mismatch.proven,
              },
        reorg,
        failAfterConfirm: mismatch === null ? fail : null,
      };
    }),
);

const failedIntentArb: fc.Arbitrary<FailedIntent> = fc
  .constantFrom(...CHECKOUT_FAILURE_STATUSES)
  .map((status) => ({ type: 'failed_intent', status }));

const linkArb: fc.Arbitrary<Link> = fc.constantFrom(...TOKENS).chain((token) =>
  fc
    .record({
      A: amountOf(token, 1n),
      extra: fc.oneof(fc.constant(0n), fc.bigInt({ min: -unit(token), max: unit(token) })),
      outcome: fc.constantFrom('open', 'claimed', 'cancel', 'expiry'),
      refundDelta: fc.option(fc.bigInt({ min: -unit(token), max: unit(token) }), { freq: 5 }),
      reorgRefund: fc.boolean(),
      expiryDelayMs: fc.integer({ min: 0, max: 30 * 24 * 3600 * 1000 }),
    })
    .map(({ A, extra, outcome, refundDelta, reorgRefund, expiryDelayMs }): Link => {
      const X = A + extra < 0n ? 0n : A + extra;
      const closes = outcome === 'cancel' || outcome === 'expiry';
      // A refund of 0 moves nothing and is no refund (rule 8 books nothing): the receivable stays.
      const refund = !closes || refundDelta === null || A + refundDelta <= 0n ? null : A + refundDelta;
      return { type: 'link', token, A, X, outcome, refund, reorgRefund, expiryDelayMs };
    }),
);

const unmatchedArb: fc.Arbitrary<Unmatched> = fc.constantFrom(...TOKENS).chain((token) =>
  fc.record({
    type: fc.constant('unmatched' as const),
    token: fc.constant(token),
    accepted: fc.boolean(),
    role: fc.constantFrom('merchant' as const, 'custody' as const),
    direction: fc.constantFrom('in' as const, 'out' as const),
    amount: amountOf(token),
  }),
);

const scenarioArb: fc.Arbitrary<Scenario> = fc.oneof(
  { arbitrary: paymentArb, weight: 4 },
  { arbitrary: failedIntentArb, weight: 1 },
  { arbitrary: linkArb, weight: 3 },
  { arbitrary: unmatchedArb, weight: 2 },
);

// ---- the in-memory poster ---------------------------------------------------------------------

/** What the poster will do: one entry per key, a replay of a key must be the same entry. */
class Book {
  readonly entries = new Map<string, EntryDraft>();
  readonly findings = new Map<string, FindingDraft>();

  has(key: string): boolean {
    return this.entries.has(key);
  }

  apply(outcome: RuleOutcome): void {
    for (const f of outcome.findings) this.findings.set(`${f.kind}|${f.ref.type}|${f.ref.id}`, f);
    const entry = outcome.entry;
    if (entry === null) return;
    const earlier = this.entries.get(entry.idempotencyKey);
    if (earlier !== undefined) {
      expect(entry).toEqual(earlier);
      return;
    }
    this.entries.set(entry.idempotencyKey, entry);
  }

  reverse(key: string | null): void {
    if (key === null) return;
    const original = this.entries.get(key);
    if (original === undefined) throw new Error(`reverse of ${key}, which was never posted`);
    this.apply({ entry: reversalOf(original), findings: [] });
  }

  findingKinds(kind: string): string[] {
    return [...this.findings.values()].filter((f) => f.kind === kind).map((f) => f.ref.id);
  }
}

type Step = (book: Book) => void;

// ---- facts of each scenario, in causal order --------------------------------------------------

function chainTransfer(
  token: Token,
  i: number,
  salt: number,
  fields: Pick<ChainTransferFact, 'from' | 'to' | 'amount'> & {
    blockSalt?: number;
    tokenAddress?: `0x${string}`;
  },
): ChainTransferFact {
  return {
    chainId: token.chainId,
    txHash: hash(i, salt),
    logIndex: salt,
    blockNumber: BigInt(1000 + i),
    blockHash: hash(1000 + i, fields.blockSalt ?? 1),
    tokenAddress: fields.tokenAddress ?? token.address,
    from: fields.from,
    to: fields.to,
    amount: fields.amount,
    occurredAt: new Date(T0.getTime() + i * 1000),
  };
}

/** Reorg of an inclusion: rule 3 decides, the poster reverses what was booked from it. */
function reorgStep(t: ChainTransferFact, role: ChainEntryRole): Step {
  return (book) => {
    const decision = reorgReversal({ transfer: t, posted: book.has(chainEntryKey(t, role)) ? role : null });
    book.apply(decision);
    book.reverse(decision.reverse);
  };
}

function stepsOf(s: Scenario, i: number): Step[] {
  const fmt = (token: Token, u: bigint) => formatDecimalAmount(u, token.decimals);
  switch (s.type) {
    case 'payment': {
      const intentId = `i${i}`;
      const N = s.P - s.F;
      const fact = {
        storeId: STORE,
        intentId,
        occurredAt: new Date(T0.getTime() + i * 1000),
        token: s.token,
        amountCoins: fmt(s.token, s.R),
        actualPaidAmount: fmt(s.token, s.P),
        serviceFeeAmount: fmt(s.token, s.F),
        netIncomeAmount: fmt(s.token, s.mismatch?.reportedN ?? N),
        fiat: { amountCents: null, currency: null, currencyRate: null },
      };
      const steps: Step[] = [(book) => book.apply(checkoutConfirmed(fact))];
      if (s.failAfterConfirm !== null) {
        const status = s.failAfterConfirm;
        steps.push((book) => {
          const decision = checkoutTerminalFailure({
            storeId: STORE,
            intentId,
            status,
            confirmedEntryPosted: book.has(checkoutConfirmedKey(intentId)),
          });
          book.apply(decision);
          book.reverse(decision.reverse);
        });
        return steps;
      }
      if (s.mismatch !== null && !s.mismatch.proven) return steps;
      const first = chainTransfer(s.token, i, 0, { from: STRANGER, to: MERCHANT_WALLET, amount: N });
      const proof = (t: ChainTransferFact): Step => {
        return (book) => {
          if (s.mismatch !== null) book.apply(checkoutConfirmed({ ...fact, provenNet: t.amount }));
          book.apply(
            paymentProven({
              storeId: STORE,
              intentId,
              transfer: t,
              token: s.token,
              expected: { token: s.token, recipient: MERCHANT_WALLET, amount: N },
            }),
          );
        };
      };
      steps.push(proof(first));
      if (s.reorg) {
        steps.push(reorgStep(first, { kind: 'payment_proof' }));
        steps.push(proof({ ...first, blockNumber: first.blockNumber + 1n, blockHash: hash(1000 + i, 2) }));
      }
      return steps;
    }
    case 'failed_intent':
      return [
        (book) => {
          const decision = checkoutTerminalFailure({
            storeId: STORE,
            intentId: `f${i}`,
            status: s.status,
            confirmedEntryPosted: false,
          });
          expect(decision).toEqual({ entry: null, reverse: null, findings: [] });
          book.apply(decision);
        },
      ];
    case 'link': {
      const base = { storeId: STORE, claimLinkId: `cl${i}`, token: s.token, amount: fmt(s.token, s.A) };
      const fundedAt = new Date(T0.getTime() + i * 1000);
      const steps: Step[] = [
        (book) => book.apply(claimLinkFunded({ ...base, occurredAt: fundedAt })),
        (book) =>
          book.apply(
            claimLinkFundingProven({
              ...base,
              transfer: chainTransfer(s.token, i, 1, { from: CUSTODY_WALLET, to: POOL_WALLET, amount: s.X }),
            }),
          ),
      ];
      if (s.outcome === 'claimed') {
        steps.push((book) =>
          book.apply(
            claimLinkClaimed({
              ...base,
              transfer: chainTransfer(s.token, i, 2, { from: POOL_WALLET, to: STRANGER, amount: s.A }),
            }),
          ),
        );
      }
      if (s.outcome === 'cancel') {
        steps.push((book) => book.apply(claimLinkCancelled({ ...base, occurredAt: fundedAt })));
      }
      if (s.outcome === 'expiry') {
        // A scheduler pass before the 14 days books nothing; the one after books the expiry.
        steps.push((book) => {
          const early = claimLinkExpired({ ...base, fundedAt, now: new Date(fundedAt.getTime() + 1000) });
          expect(early).toEqual({ entry: null, findings: [] });
          book.apply(
            claimLinkExpired({
              ...base,
              fundedAt,
              now: new Date(fundedAt.getTime() + CLAIM_LINK_EXPIRY_MS + s.expiryDelayMs),
            }),
          );
        });
      }
      const refund = s.refund;
      if (refund !== null) {
        const t = chainTransfer(s.token, i, 3, { from: POOL_WALLET, to: CUSTODY_WALLET, amount: refund });
        const refundStep =
          (tr: ChainTransferFact): Step =>
          (book) =>
            book.apply(claimLinkRefunded({ ...base, transfer: tr }));
        steps.push(refundStep(t));
        if (s.reorgRefund) {
          steps.push(reorgStep(t, { kind: 'claim_link_refunded', claimLinkId: base.claimLinkId }));
          steps.push(refundStep({ ...t, blockHash: hash(1000 + i, 7) }));
        }
      }
      return steps;
    }
    case 'unmatched': {
      const wallet = s.role === 'merchant' ? MERCHANT_WALLET : CUSTODY_WALLET;
      const t = chainTransfer(s.token, i, 4, {
        from: s.direction === 'in' ? STRANGER : wallet,
        to: s.direction === 'in' ? wallet : STRANGER,
        amount: s.amount,
        ...(s.accepted ? {} : { tokenAddress: FAKE_TOKEN }),
      });
      return [
        (book) =>
          book.apply(
            unmatchedTransfer({
              storeId: STORE,
              transfer: t,
              token: s.accepted ? s.token : null,
              wallet: { address: wallet, role: s.role },
            }),
          ),
      ];
    }
  }
}

/** Random interleaving that keeps each scenario's own order; each step delivered once or twice. */
const worldArb = fc.array(scenarioArb, { minLength: 1, maxLength: 25 }).chain((scenarios) => {
  const steps = scenarios.map((s, i) => stepsOf(s, i));
  const total = steps.reduce((n, own) => n + own.length, 0);
  return fc
    .record({
      priorities: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), {
        minLength: total,
        maxLength: total,
      }),
      twice: fc.array(fc.boolean(), { minLength: total, maxLength: total }),
    })
    .map(({ priorities, twice }) => {
      const schedule: Array<{ at: number; step: Step; twice: boolean }> = [];
      let k = 0;
      for (const own of steps) {
        // Sorted priorities handed out in order keep each scenario's causal order.
        const at = priorities.slice(k, k + own.length).sort((a, b) => a - b);
        own.forEach((step, j) => {
          schedule.push({ at: at[j] ?? 0, step, twice: twice[k + j] ?? false });
        });
        k += own.length;
      }
      schedule.sort((a, b) => a.at - b.at);
      return { scenarios, schedule };
    });
});

// ---- expected arithmetic, computed from the scenarios alone ----------------------------------

type Totals = Map<string, bigint>;

function expectedTotals(scenarios: Scenario[]): Totals {
  const totals: Totals = new Map();
  const add = (kind: AccountKind, token: Token, amount: bigint) => {
    const key = `${kind}|${assetOf(token)}`;
    totals.set(key, (totals.get(key) ?? 0n) + amount);
  };
  for (const s of scenarios) {
    if (s.type === 'payment') {
      const booked = s.failAfterConfirm === null && (s.mismatch === null || s.mismatch.proven);
      if (!booked) continue;
      add('income:sales', s.token, -s.R);
      add('expense:service_fees', s.token, s.F);
      add('expense:sales_shortfall', s.token, s.R > s.P ? s.R - s.P : 0n);
      add('liability:customer_overpayments', s.token, s.P > s.R ? -(s.P - s.R) : 0n);
      add('assets:wallet', s.token, s.P - s.F);
      add('assets:in_transit', s.token, 0n);
    } else if (s.type === 'link') {
      const fee = s.X > s.A ? s.X - s.A : 0n;
      add('assets:custody', s.token, -s.A - fee);
      add('expense:payout_fees', s.token, fee);
      if (s.outcome === 'open') add('assets:claim_pool', s.token, s.A);
      if (s.outcome === 'claimed') add('expense:payouts', s.token, s.A);
      if (s.outcome === 'cancel' || s.outcome === 'expiry') {
        if (s.refund === null) {
          add('assets:refund_receivable', s.token, s.A);
        } else {
          // Rule 8 clears what arrived; a short refund leaves the rest owed, an excess is a
          // funding overpayment returned out of payout_fees.
          add('assets:custody', s.token, s.refund);
          if (s.refund >= s.A) add('expense:payout_fees', s.token, s.A - s.refund);
          else add('assets:refund_receivable', s.token, s.A - s.refund);
        }
      }
    } else if (s.type === 'unmatched' && s.accepted) {
      const walletKind = s.role === 'merchant' ? 'assets:wallet' : 'assets:custody';
      if (s.direction === 'in') {
        add(walletKind, s.token, s.amount);
        add('assets:suspense', s.token, -s.amount);
      } else {
        add(walletKind, s.token, -s.amount);
        add('equity:owner_transfers', s.token, s.amount);
      }
    }
  }
  return totals;
}

const ALL_KINDS: AccountKind[] = [
  'assets:in_transit',
  'assets:wallet',
  'assets:custody',
  'assets:claim_pool',
  'assets:refund_receivable',
  'assets:suspense',
  'income:sales',
  'expense:sales_shortfall',
  'liability:customer_overpayments',
  'expense:service_fees',
  'expense:payout_fees',
  'expense:payouts',
  'equity:owner_transfers',
];

function run(world: { schedule: Array<{ step: Step; twice: boolean }> }): Book {
  const book = new Book();
  for (const { step, twice } of world.schedule) {
    step(book);
    if (twice) step(book);
  }
  return book;
}

describe('posting rules: seeded simulation', () => {
  it('property: every entry balances per asset, has no zero line and at least two lines', () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const book = run(world);
        for (const entry of book.entries.values()) {
          expect(entry.lines.length).toBeGreaterThanOrEqual(2);
          expect(entry.lines.every((l) => l.amount !== 0n)).toBe(true);
          expect(isBalanced(entry.lines)).toBe(true);
          expect([...sumByAsset(entry.lines).values()].every((v) => v === 0n)).toBe(true);
          expect(entry.lines.every((l) => l.account.storeId === STORE && entry.storeId === STORE)).toBe(true);
          expect(() => JSON.stringify(entry.metadata ?? {})).not.toThrow();
        }
      }),
      { numRuns: 200, ...replayParameters() },
    );
  });

  it('property: account totals follow the rule arithmetic', () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const book = run(world);
        const ledger = trialBalance(book.entries.values());
        const expected = expectedTotals(world.scenarios);
        for (const token of TOKENS) {
          for (const kind of ALL_KINDS) {
            const want = expected.get(`${kind}|${assetOf(token)}`) ?? 0n;
            expect({ kind, token: token.symbol, total: balanceOf(ledger, kind, token) }).toEqual({
              kind,
              token: token.symbol,
              total: want,
            });
          }
        }
      }),
      { numRuns: 200, ...replayParameters() },
    );
  });

  it('property: findings name exactly the disagreements in the facts', () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const book = run(world);
        const ids = (pred: (s: Scenario) => boolean, prefix: string) =>
          world.scenarios.flatMap((s, i) => (pred(s) ? [`${prefix}${i}`] : [])).sort();
        const sorted = (a: string[]) => [...a].sort();
        const isPayment = (s: Scenario): s is Payment => s.type === 'payment';
        const isLink = (s: Scenario): s is Link => s.type === 'link';
        expect(sorted(book.findingKinds('underpaid'))).toEqual(ids((s) => isPayment(s) && s.P < s.R, 'i'));
        expect(sorted(book.findingKinds('overpaid'))).toEqual(ids((s) => isPayment(s) && s.P > s.R, 'i'));
        expect(sorted(book.findingKinds('fee_arithmetic_mismatch'))).toEqual(
          ids((s) => isPayment(s) && s.mismatch !== null, 'i'),
        );
        expect(sorted(book.findingKinds('confirmed_then_failed'))).toEqual(
          ids((s) => isPayment(s) && s.failAfterConfirm !== null, 'i'),
        );
        expect(sorted(book.findingKinds('funding_mismatch'))).toEqual(
          ids((s) => isLink(s) && s.X < s.A, 'cl'),
        );
        for (const kind of ['amount_mismatch', 'recipient_mismatch', 'token_mismatch']) {
          expect(book.findingKinds(kind)).toEqual([]);
        }
        const unmatched = (dir: 'in' | 'out', accepted: boolean) =>
          world.scenarios.filter(
            (s) => s.type === 'unmatched' && s.direction === dir && s.accepted === accepted && s.amount > 0n,
          ).length;
        expect(book.findingKinds('unmatched_transfer_in')).toHaveLength(unmatched('in', true));
        expect(book.findingKinds('unmatched_transfer_out')).toHaveLength(unmatched('out', true));
        expect(book.findingKinds('unknown_token')).toHaveLength(
          unmatched('in', false) + unmatched('out', false),
        );
      }),
      { numRuns: 200, ...replayParameters() },
    );
  });
});
