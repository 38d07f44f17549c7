import type { Pool } from 'pg';
import { formatDecimalAmount, parseDecimalAmount } from '../money/decimalAmount.ts';
import type { ReconResult } from '../recon/runReconciliation.ts';
import { type CheckoutStatus, checkoutStatusName } from '../svc/models/checkoutStatus.ts';
import { type DemoScenario, FINAL_STATUS, type IntentOutcome, type PayoutOutcome } from './demoScenario.ts';
import type { DrivenIntent, DriveResult } from './driveScenario.ts';

/**
 * What the demo shows a person, and checks: what became of every planned intent and claim link
 * in the books, the findings, whether each planted problem was found, the balance proofs and the
 * trial balance. Everything but `timings` and `reports` is a function of the seed and sizes, so
 * two runs with one seed print the same summary.
 */
export interface DemoSummary {
  seed: string;
  sizes: { intents: number; payouts: number };
  /** Every invariant held and every planted problem was found. */
  passed: boolean;
  intents: OutcomeRow[];
  /** Confirmed payments per chain and token, as the reconciliation report totals them. */
  totals: Array<{
    chainId: number;
    symbol: string;
    count: number;
    requested: string;
    paid: string;
    fees: string;
    net: string;
  }>;
  payouts: PayoutRow[];
  /** Findings by kind: open ones and those that resolved once their cause cleared. */
  findings: Array<{ kind: string; severity: string; open: number; resolved: number }>;
  planted: PlantedCheck[];
  invariants: Array<{ name: string; ok: boolean; detail: string }>;
  proofs: Array<{
    chainId: number;
    symbol: string;
    wallet: 'merchant' | 'custody';
    ledger: string;
    chain: string | null;
    result: string;
  }>;
  trialBalance: Array<{ chainId: number; symbol: string; net: string }>;
  reports: {
    dir: string;
    html: string | null;
    json: string | null;
    csv: string | null;
    markdown: string | null;
  };
  timings: Record<string, number>;
}

export interface OutcomeRow {
  outcome: IntentOutcome;
  /** Through the service's temporary wallet (screened, fee charged) or paid directly. */
  route: 'temp_wallet' | 'direct';
  count: number;
  /** The service's final statuses of these intents. */
  statuses: string[];
  /** The entry lines every intent of this outcome has, `kind account sign` (docs/accounting.md). */
  entries: string[];
  /** Order ids of intents booked otherwise (other lines, amounts or status). */
  mismatched: string[];
  /** Every intent of the outcome has exactly those lines, with the amounts the rules say. */
  ok: boolean;
}

export interface PayoutRow {
  outcome: PayoutOutcome;
  count: number;
  amount: Record<string, string>;
  entries: string[];
  ok: boolean;
}

export interface PlantedCheck {
  problem: string;
  /** What a correct daemon does about it: the finding kind, or how it books it. */
  expected: string;
  count: number;
  found: number;
  ok: boolean;
}

interface LedgerLine {
  ref_id: string;
  kind: string;
  account: string;
  amount: string;
  decimals: number;
}

const CONFIRMED_OUTCOMES = new Set<IntentOutcome>([
  'exact',
  'underpaid_accepted',
  'overpaid',
  'fee_mismatch',
]);

export async function buildSummary(
  pool: Pool,
  scenario: DemoScenario,
  driven: DriveResult,
  recon: ReconResult,
  timings: Record<string, number>,
  /** The daemon's calls to the service by outcome (envelope code or failure kind), from its metrics. */
  apiOutcomes: Map<string, number>,
): Promise<DemoSummary> {
  const ids = driven.intents.map((i) => i.intentId);
  const facts = await intentFacts(pool, ids);
  const lines = await ledgerLines(pool, ids.concat(driven.payouts.map((p) => p.claimLinkId)));

  const intents = outcomeRows(driven, facts, lines);
  const payouts = payoutRows(driven, lines);
  const findings = await findingsByKind(pool);
  const planted = await plantedChecks(pool, driven, facts, lines);
  const { rateLimited, serverErrors } = scenario.apiFaults;
  // What the daemon met of the injected faults (the demo waits until every one was served).
  const met =
    Math.min(apiOutcomes.get('40001') ?? 0, rateLimited) +
    Math.min(apiOutcomes.get('90000') ?? 0, serverErrors);
  planted.push({
    problem: `service answers 429 x${rateLimited} and 500 x${serverErrors} to the daemon`,
    expected: 'retried; every payment booked once',
    count: rateLimited + serverErrors,
    found: met,
    ok: met === rateLimited + serverErrors && intents.every((r) => r.ok),
  });

  const report = recon.report;
  const totals = report.payments.byStatus
    .filter((t) => t.status === 'CONFIRMED')
    .map((t) => ({
      chainId: t.chainId,
      symbol: t.symbol,
      count: t.count,
      requested: t.requested,
      paid: t.paid,
      fees: t.fees,
      net: t.net,
    }))
    .sort((a, b) => a.symbol.localeCompare(b.symbol));
  const proofs = report.balanceProofs
    .map((p) => ({
      chainId: p.chainId,
      symbol: p.symbol,
      wallet: p.role,
      ledger: p.ledgerBalance,
      chain: p.chainBalance,
      result: p.result,
    }))
    .sort((a, b) => a.wallet.localeCompare(b.wallet) || a.symbol.localeCompare(b.symbol));
  const trialBalance = report.trialBalance
    .map((t) => ({ chainId: t.chainId, symbol: t.symbol, net: t.net }))
    .sort((a, b) => a.symbol.localeCompare(b.symbol));

  const invariants = [
    {
      name: 'balance proofs',
      ok: proofs.length > 0 && proofs.every((p) => p.result === 'pass'),
      detail: `${proofs.filter((p) => p.result === 'pass').length} of ${proofs.length} wallet and token balances equal balanceOf at a finalized block`,
    },
    {
      name: 'trial balance',
      ok: trialBalance.length > 0 && trialBalance.every((t) => t.net === '0'),
      detail: trialBalance.map((t) => `${t.symbol} ${t.net}`).join(', '),
    },
    {
      name: 'entries per intent outcome',
      ok: intents.every((r) => r.ok),
      detail: `${
        intents
          .filter((r) => !r.ok)
          .map((r) => r.outcome)
          .join(', ') || 'every outcome'
      } ${intents.every((r) => r.ok) ? 'booked as docs/accounting.md says' : 'booked otherwise'}`,
    },
    {
      name: 'entries per payout outcome',
      ok: payouts.every((r) => r.ok),
      detail: `${
        payouts
          .filter((r) => !r.ok)
          .map((r) => r.outcome)
          .join(', ') || 'every outcome'
      } ${payouts.every((r) => r.ok) ? 'booked as docs/accounting.md says' : 'booked otherwise'}`,
    },
    {
      name: 'reconciliation proven',
      ok: report.passed,
      detail: report.checks
        .filter((c) => c.layer === 'assertions')
        .map((c) => `${c.name} ${c.status}`)
        .join(', '),
    },
  ];
  const file = (name: string) => recon.files.find((f) => f.name === name)?.path ?? null;
  return {
    seed: scenario.seed,
    sizes: { intents: scenario.intents.length, payouts: scenario.payouts.length },
    passed: invariants.every((i) => i.ok) && planted.every((p) => p.ok),
    intents,
    totals,
    payouts,
    findings,
    planted,
    invariants,
    proofs,
    trialBalance,
    reports: {
      dir: recon.dir,
      html: file('report.html'),
      json: file('report.json'),
      csv: recon.files.some((f) => f.name.startsWith('csv/')) ? `${recon.dir}/csv` : null,
      markdown: file('report.md'),
    },
    timings,
  };
}

interface IntentFact {
  id: string;
  status: number | null;
  amount_coins: string;
  actual_paid_amount: string | null;
  service_fee_amount: string | null;
  net_income_amount: string | null;
  tx_hash: string | null;
  tx_hash_2: string | null;
}

async function intentFacts(pool: Pool, ids: string[]): Promise<Map<string, IntentFact>> {
  const { rows } = await pool.query<IntentFact>(
    `select id, status, amount_coins::text, actual_paid_amount::text, service_fee_amount::text,
            net_income_amount::text, lower(tx_hash) as tx_hash, lower(tx_hash_2) as tx_hash_2
     from checkout_intents where id = any($1)`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r]));
}

async function ledgerLines(pool: Pool, refs: string[]): Promise<Map<string, LedgerLine[]>> {
  const { rows } = await pool.query<LedgerLine>(
    `select e.ref_id, e.kind, split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) as account,
            p.amount::text as amount, a.decimals
     from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
     where e.ref_id = any($1) order by e.id, a.code`,
    [refs],
  );
  const out = new Map<string, LedgerLine[]>();
  for (const r of rows) out.set(r.ref_id, [...(out.get(r.ref_id) ?? []), r]);
  return out;
}

/** `kind account +|-`, distinct and sorted: an entry's shape without its amounts. */
function shape(lines: LedgerLine[]): string[] {
  const set = new Set(lines.map((l) => `${l.kind} ${l.account} ${l.amount.startsWith('-') ? '-' : '+'}`));
  return [...set].sort();
}

function mostCommon(values: string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0];
}

function sumOf(lines: LedgerLine[], kind: string, account: string): bigint {
  return lines
    .filter((l) => l.kind === kind && l.account === account)
    .reduce((s, l) => s + BigInt(l.amount), 0n);
}

/**
 * Rule 1 and rule 2 with their amounts, for one confirmed intent: sales R, shortfall max(R−P,0),
 * overpayment max(P−R,0), in transit plus fees P, and the proof moves the in-transit amount
 * into the wallet. Decimal strings parsed with the token's decimals, never numbers.
 */
function confirmedAmountsHold(fact: IntentFact, lines: LedgerLine[]): boolean {
  const decimals = lines[0]?.decimals;
  if (decimals === undefined || fact.actual_paid_amount === null) return false;
  const r = parseDecimalAmount(fact.amount_coins, decimals);
  const p = parseDecimalAmount(fact.actual_paid_amount, decimals);
  const k = 'checkout.confirmed';
  const max0 = (x: bigint) => (x > 0n ? x : 0n);
  const inTransit = sumOf(lines, k, 'assets:in_transit');
  return (
    sumOf(lines, k, 'income:sales') === -r &&
    sumOf(lines, k, 'expense:sales_shortfall') === max0(r - p) &&
    sumOf(lines, k, 'liability:customer_overpayments') === -max0(p - r) &&
    inTransit + sumOf(lines, k, 'expense:service_fees') === p &&
    sumOf(lines, 'chain.payment_proven', 'assets:wallet') === inTransit &&
    sumOf(lines, 'chain.payment_proven', 'assets:in_transit') === -inTransit
  );
}

function outcomeRows(
  driven: DriveResult,
  facts: Map<string, IntentFact>,
  lines: Map<string, LedgerLine[]>,
): OutcomeRow[] {
  // Per outcome and route: a direct payment pays no service fee, so it has no fee line.
  const groups = new Map<string, DrivenIntent[]>();
  // The reorged payment has a reversal and a second proof: a planted problem of its own.
  for (const i of driven.intents.filter((x) => !x.plan.reorged))
    groups.set(`${i.plan.outcome} ${i.plan.route}`, [
      ...(groups.get(`${i.plan.outcome} ${i.plan.route}`) ?? []),
      i,
    ]);
  return [...groups.values()]
    .map((members): OutcomeRow => {
      const { outcome, route } = (members[0] as DrivenIntent).plan;
      const status = (m: DrivenIntent) => {
        const code = facts.get(m.intentId)?.status;
        return code == null ? 'UNKNOWN' : checkoutStatusName(code as CheckoutStatus);
      };
      const shapes = members.map((m) => shape(lines.get(m.intentId) ?? []).join('|'));
      // The shape most of the outcome's intents have: the one the others are compared with.
      const common = mostCommon(shapes);
      const booksRight = (m: DrivenIntent, i: number) => {
        if (shapes[i] !== common || status(m) !== FINAL_STATUS[outcome]) return false;
        const fact = facts.get(m.intentId);
        return CONFIRMED_OUTCOMES.has(outcome)
          ? fact !== undefined && confirmedAmountsHold(fact, lines.get(m.intentId) ?? [])
          : (lines.get(m.intentId) ?? []).length === 0;
      };
      const mismatched = members.filter((m, i) => !booksRight(m, i)).map((m) => m.plan.key);
      return {
        outcome,
        route,
        count: members.length,
        statuses: [...new Set(members.map(status))].sort(),
        entries: common ? common.split('|').filter(Boolean) : [],
        mismatched,
        ok: mismatched.length === 0,
      };
    })
    .sort(
      (a, b) => b.count - a.count || a.outcome.localeCompare(b.outcome) || a.route.localeCompare(b.route),
    );
}

/** Planned payout amounts are whole cents (demoScenario.ts), whatever the token's decimals. */
const PAYOUT_DECIMALS = 2;

const PAYOUT_KINDS: Record<PayoutOutcome, string[]> = {
  claimed: ['claim_link.claimed', 'claim_link.funded', 'claim_link.funding_fee'],
  cancelled: ['claim_link.cancelled', 'claim_link.funded', 'claim_link.funding_fee', 'claim_link.refunded'],
  expired: ['claim_link.expired', 'claim_link.funded', 'claim_link.funding_fee', 'claim_link.refunded'],
};

function payoutRows(driven: DriveResult, lines: Map<string, LedgerLine[]>): PayoutRow[] {
  const groups = new Map<PayoutOutcome, DriveResult['payouts']>();
  for (const p of driven.payouts) groups.set(p.plan.outcome, [...(groups.get(p.plan.outcome) ?? []), p]);
  return [...groups.entries()]
    .map(([outcome, members]): PayoutRow => {
      const amount: Record<string, bigint> = {};
      for (const m of members)
        amount[m.plan.coin] =
          (amount[m.plan.coin] ?? 0n) + parseDecimalAmount(m.plan.amount, PAYOUT_DECIMALS);
      const shapes = members.map((m) => shape(lines.get(m.claimLinkId) ?? []).join('|'));
      const kindsOk = members.every((m) => {
        const kinds = [...new Set((lines.get(m.claimLinkId) ?? []).map((l) => l.kind))].sort();
        return kinds.join(',') === PAYOUT_KINDS[outcome].join(',');
      });
      return {
        outcome,
        count: members.length,
        amount: Object.fromEntries(
          Object.entries(amount).map(([k, v]) => [k, formatDecimalAmount(v, PAYOUT_DECIMALS)]),
        ),
        entries: shapes[0] ? shapes[0].split('|').filter(Boolean) : [],
        ok: kindsOk && new Set(shapes).size === 1,
      };
    })
    .sort((a, b) => a.outcome.localeCompare(b.outcome));
}

async function findingsByKind(pool: Pool): Promise<DemoSummary['findings']> {
  const { rows } = await pool.query<{ kind: string; severity: string; open: string; resolved: string }>(
    `select kind,
            -- The gravest severity of the kind (unknown_token is info on chain, critical on a payment).
            (array_agg(severity order by case severity when 'critical' then 0 when 'warning' then 1 else 2 end))[1] as severity,
            count(*) filter (where resolved_at is null)::text as open,
            count(*) filter (where resolved_at is not null)::text as resolved
     from findings group by kind order by kind`,
  );
  return rows.map((r) => ({
    kind: r.kind,
    severity: r.severity,
    open: Number(r.open),
    resolved: Number(r.resolved),
  }));
}

async function plantedChecks(
  pool: Pool,
  driven: DriveResult,
  facts: Map<string, IntentFact>,
  lines: Map<string, LedgerLine[]>,
): Promise<PlantedCheck[]> {
  const of = (pred: (i: DrivenIntent) => boolean) => driven.intents.filter(pred).map((i) => i.intentId);
  const findingFor = async (kind: string, refIds: string[]) => {
    const { rows } = await pool.query<{ n: string }>(
      `select count(distinct ref_id)::text as n from findings where kind = $1 and ref_id = any($2)`,
      [kind, refIds],
    );
    return Number(rows[0]?.n ?? 0);
  };
  const findingForTx = async (kind: string, txHashes: string[]) => {
    const { rows } = await pool.query<{ n: string }>(
      `select count(*)::text as n from findings where kind = $1 and lower(details->>'tx_hash') = any($2)`,
      [kind, txHashes],
    );
    return Number(rows[0]?.n ?? 0);
  };
  const check = (problem: string, expected: string, count: number, found: number): PlantedCheck => ({
    problem,
    expected,
    count,
    found,
    ok: count > 0 && found === count,
  });
  const confirmedOnce = (intentIds: string[]) =>
    intentIds.filter(
      (id) =>
        (lines.get(id) ?? []).filter((l) => l.kind === 'checkout.confirmed' && l.account === 'income:sales')
          .length === 1,
    ).length;

  const dropped = of((i) => i.plan.webhook === 'dropped');
  const feeMismatch = of((i) => i.plan.outcome === 'fee_mismatch');
  const underpaid = of((i) => i.plan.outcome === 'underpaid_accepted');
  const overpaid = of((i) => i.plan.outcome === 'overpaid');
  const manual = of((i) => i.plan.outcome === 'manual_review');
  const faulted = of(
    (i) => i.plan.webhook === 'duplicated' || i.plan.webhook === 'reordered' || i.plan.webhook === 'delayed',
  );
  const reorgTx = driven.reorgedIntentId ? facts.get(driven.reorgedIntentId)?.tx_hash : null;
  const reorgLines = driven.reorgedIntentId ? (lines.get(driven.reorgedIntentId) ?? []) : [];
  const proofs = reorgLines.filter(
    (l) => l.kind === 'chain.payment_proven' && l.account === 'assets:wallet',
  ).length;
  const reversals = reorgLines.filter(
    (l) => l.kind === 'chain.payment_proven.reversal' && l.account === 'assets:wallet',
  ).length;
  const unaccepted = await pool.query<{ n: string }>(
    `select ((select count(*) from chain_transfers where lower(tx_hash) = $1)
           + (select count(*) from ledger_entries where lower(metadata->>'tx_hash') = $1))::text as n`,
    [driven.unacceptedTokenTxHash],
  );

  return [
    check(
      'webhook dropped (polling still books the payment)',
      'missing_webhook',
      dropped.length,
      await findingFor('missing_webhook', dropped),
    ),
    check(
      'service reports net ≠ paid − fee',
      'fee_arithmetic_mismatch',
      feeMismatch.length,
      await findingFor('fee_arithmetic_mismatch', feeMismatch),
    ),
    check(
      'paid less, confirmed anyway',
      'underpaid',
      underpaid.length,
      await findingFor('underpaid', underpaid),
    ),
    check('paid more than asked', 'overpaid', overpaid.length, await findingFor('overpaid', overpaid)),
    check('held for manual review', 'stuck_intent', manual.length, await findingFor('stuck_intent', manual)),
    check(
      'stranger pays the merchant wallet',
      'unmatched_transfer_in (suspense)',
      1,
      await findingForTx('unmatched_transfer_in', [driven.strangerTxHash]),
    ),
    check(
      'reorg replaces a proven payment',
      'reorged_transfer, proof reversed, proven again',
      1,
      reorgTx && (await findingForTx('reorged_transfer', [reorgTx])) > 0 && proofs === 2 && reversals === 1
        ? 1
        : 0,
    ),
    check(
      'token nobody accepts sent to the merchant wallet',
      'not read, not booked',
      1,
      Number(unaccepted.rows[0]?.n) === 0 ? 1 : 0,
    ),
    check(
      'webhooks duplicated, reordered, delayed',
      'each payment booked once',
      faulted.length,
      confirmedOnce(faulted),
    ),
  ];
}
