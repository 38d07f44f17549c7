import { sql } from 'drizzle-orm';
import type { ChainRegistry } from '../../config/chainRegistry.ts';
import { correctionsInPeriod } from '../../corrections/correction.ts';
import type { DbExecutor } from '../../db/database.ts';
import { trialBalance } from '../../ledger/balances.ts';
import { type ChainHead, chainHead, chainHeadAt } from '../../ledger/chainHead.ts';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import { suspenseTotals } from '../../suspense/suspenseItems.ts';
import { checkoutStatusName } from '../../svc/models/checkoutStatus.ts';
import type { BalanceProof } from '../balanceProofs.ts';
import { storeFilter, tokensTable } from '../checks/checkContext.ts';
import type { Period } from '../period.ts';
import { findingsSection } from './reportFindings.ts';
import {
  type AccountStatement,
  type ChainHeadRow,
  type CheckResult,
  type CorrectionRow,
  FINDINGS_SAMPLE_PER_KIND,
  type PaymentDifference,
  type PaymentTotals,
  type PayoutTotal,
  type ProofRow,
  REPORT_SCHEMA,
  REPORT_VERSION,
  type ReconReport,
  type StoreValuationSection,
  type SuspenseSection,
  type TrialBalanceRow,
} from './reportModel.ts';

export interface ReportInput {
  period: Period;
  storeId: string | null;
  chains: ChainRegistry;
  generatedAt: Date;
  checks: CheckResult[];
  proofs: BalanceProof[];
  /** Where the full findings lists are written (FINDINGS_FULL_LIST), null when they are not. */
  findingsFullList: string | null;
  /** The stores' figures in their functional currencies (reportValuation.ts); none when absent. */
  valuation?: StoreValuationSection[];
}

/**
 * Reads the report of a period from the database, in the caller's (read-only, repeatable read)
 * transaction: every figure is an aggregate computed by PostgreSQL over exact numerics; the
 * process only formats base units as decimals. The period is by when things happened: postings
 * by occurred_at, intents by confirmation (or, unconfirmed, by when first tracked), payouts by the
 * time of each outcome. Findings are the run's view "as of now": new since the period began, open
 * from before it, resolved since it began (docs/decisions.md); the report carries their counts and
 * the first few of each kind, the full lists go to findings.csv (reportFindings.ts).
 */
export async function buildReport(tx: DbExecutor, input: ReportInput): Promise<ReconReport> {
  const [accounts, payments, payouts, suspense, findings, trial] = [
    await accountStatements(tx, input),
    await paymentTotals(tx, input),
    await payoutTotals(tx, input),
    await suspenseSection(tx, input),
    await findingsSection(tx, input, FINDINGS_SAMPLE_PER_KIND, input.findingsFullList),
    await trialBalanceRows(tx),
  ];
  const passed = input.checks.every(
    (c) => c.status !== 'error' && (c.layer !== 'assertions' || c.status === 'pass'),
  );
  return {
    schema: REPORT_SCHEMA,
    version: REPORT_VERSION,
    generatedAt: input.generatedAt.toISOString(),
    period: { from: input.period.from.toISOString(), to: input.period.to.toISOString() },
    storeId: input.storeId,
    passed,
    checks: input.checks,
    accounts,
    payments,
    payouts,
    suspense,
    corrections: await correctionRows(tx, input),
    findings,
    balanceProofs: input.proofs.map((p) => proofRow(p, input.generatedAt)),
    trialBalance: trial,
    ledgerChain: {
      atPeriodEnd: headRow(await chainHeadAt(tx, input.period.to)),
      atGeneration: headRow(await chainHead(tx)),
    },
    valuation: input.valuation ?? [],
  };
}

function headRow(head: ChainHead | null): ChainHeadRow | null {
  return head
    ? {
        seq: head.seq.toString(),
        hash: head.hash,
        entryId: head.entryId.toString(),
        sealedAt: head.sealedAt.toISOString(),
      }
    : null;
}

const fmt = (units: string | null, decimals: number) => formatDecimalAmount(BigInt(units ?? '0'), decimals);
const iso = (t: Date | string | null) => (t === null ? null : new Date(t).toISOString());

async function accountStatements(tx: DbExecutor, input: ReportInput): Promise<AccountStatement[]> {
  const { from, to } = input.period;
  const { rows } = await tx.execute<{
    code: string;
    type: AccountStatement['type'];
    store_id: string;
    chain_id: string;
    symbol: string;
    token: string;
    decimals: number;
    opening: string;
    debits: string;
    credits: string;
  }>(sql`
    with moved as (
      select p.account_id,
             sum(p.amount) filter (where p.occurred_at < ${from.toISOString()}::timestamptz) as opening,
             sum(p.amount) filter (where p.occurred_at >= ${from.toISOString()}::timestamptz and p.amount > 0) as debits,
             sum(p.amount) filter (where p.occurred_at >= ${from.toISOString()}::timestamptz and p.amount < 0) as credits
      from ledger_postings p
      where p.occurred_at < ${to.toISOString()}::timestamptz
      group by p.account_id
    )
    select a.code, a.type, a.store_id, a.chain_id::text, a.symbol, a.token, a.decimals,
           coalesce(m.opening, 0)::text as opening, coalesce(m.debits, 0)::text as debits,
           coalesce(m.credits, 0)::text as credits
    from ledger_accounts a left join moved m on m.account_id = a.id
    where ${storeFilter(sql`a.store_id`, input.storeId)}
    order by a.code`);
  return rows.map((r) => {
    const closing = (BigInt(r.opening) + BigInt(r.debits) + BigInt(r.credits)).toString();
    return {
      code: r.code,
      kind: r.code.split(':').slice(0, 2).join(':'),
      type: r.type,
      storeId: r.store_id,
      chainId: Number(r.chain_id),
      symbol: r.symbol,
      token: r.token,
      decimals: r.decimals,
      opening: fmt(r.opening, r.decimals),
      debits: fmt(r.debits, r.decimals),
      credits: fmt(r.credits, r.decimals),
      closing: fmt(closing, r.decimals),
    };
  });
}

async function paymentTotals(tx: DbExecutor, input: ReportInput): Promise<PaymentTotals> {
  const from = input.period.from.toISOString();
  const to = input.period.to.toISOString();
  const inPeriod = sql`coalesce(ci.confirmed_at, ci.tracked_at) >= ${from}::timestamptz
    and coalesce(ci.confirmed_at, ci.tracked_at) < ${to}::timestamptz and ${storeFilter(sql`ci.store_id`, input.storeId)}`;
  // Summed, then scaled once per group: numerics are exact, so trunc(sum(x) * 10^d) equals
  // trunc(sum(x * 10^d)), without a multiplication per intent.
  const units = (column: string) =>
    sql`coalesce(trunc(sum(${sql.raw(`ci.${column}`)}::numeric) * tk.unit), 0)::text`;
  const tokens = tokensTable(input.chains);

  const byStatus = await tx.execute<{
    store_id: string;
    chain_id: string;
    symbol: string;
    decimals: number;
    status: number | null;
    n: string;
    requested: string;
    paid: string;
    fees: string;
    net: string;
  }>(sql`
    select ci.store_id, ci.chain_id::text, tk.symbol, tk.decimals, ci.status, count(*)::text as n,
           ${units('amount_coins')} as requested, ${units('actual_paid_amount')} as paid,
           ${units('service_fee_amount')} as fees, ${units('net_income_amount')} as net
    from checkout_intents ci
    join ${tokens} on tk.chain_id = ci.chain_id and tk.token = lower(ci.coin_contract)
    where ${inPeriod}
    group by ci.store_id, ci.chain_id, tk.symbol, tk.decimals, tk.unit, ci.status
    order by ci.store_id, ci.chain_id, tk.symbol, ci.status`);

  const fiat = await tx.execute<{ currency: string; status: number | null; n: string; cents: string }>(sql`
    select coalesce(ci.currency_symbol, ci.currency::text) as currency, ci.status, count(*)::text as n,
           sum(ci.amount_cents)::text as cents
    from checkout_intents ci
    where ${inPeriod} and ci.amount_cents is not null
    group by 1, 2 order by 1, 2`);

  const perDay = await tx.execute<{
    day: string;
    chain_id: string;
    symbol: string;
    decimals: number;
    n: string;
    paid: string;
    fees: string;
    net: string;
  }>(sql`
    select to_char(date_trunc('day', ci.confirmed_at at time zone 'UTC'), 'YYYY-MM-DD') as day,
           ci.chain_id::text, tk.symbol, tk.decimals, count(*)::text as n,
           ${units('actual_paid_amount')} as paid, ${units('service_fee_amount')} as fees,
           ${units('net_income_amount')} as net
    from checkout_intents ci
    join ${tokens} on tk.chain_id = ci.chain_id and tk.token = lower(ci.coin_contract)
    where ${inPeriod} and ci.status = 20
    group by 1, 2, 3, 4, tk.unit order by 1, 2, 3`);

  const diffs = await tx.execute<{
    id: string;
    store_id: string;
    chain_id: string;
    symbol: string;
    decimals: number;
    r: string;
    p: string;
    confirmed_at: Date | string | null;
  }>(sql`
    select ci.id, ci.store_id, ci.chain_id::text, tk.symbol, tk.decimals, ci.confirmed_at,
           trunc(ci.amount_coins::numeric * tk.unit)::text as r,
           trunc(ci.actual_paid_amount::numeric * tk.unit)::text as p
    from checkout_intents ci
    join ${tokens} on tk.chain_id = ci.chain_id and tk.token = lower(ci.coin_contract)
    where ${inPeriod} and ci.status = 20 and ci.actual_paid_amount::numeric <> ci.amount_coins::numeric
    order by ci.confirmed_at, ci.id`);
  const difference = (r: (typeof diffs.rows)[number]): PaymentDifference => ({
    intentId: r.id,
    storeId: r.store_id,
    chainId: Number(r.chain_id),
    symbol: r.symbol,
    requested: fmt(r.r, r.decimals),
    paid: fmt(r.p, r.decimals),
    difference: fmt((BigInt(r.p) - BigInt(r.r)).toString(), r.decimals),
    confirmedAt: iso(r.confirmed_at),
  });

  return {
    byStatus: byStatus.rows.map((r) => ({
      storeId: r.store_id,
      chainId: Number(r.chain_id),
      symbol: r.symbol,
      status:
        r.status === null
          ? 'UNKNOWN'
          : checkoutStatusName(r.status as Parameters<typeof checkoutStatusName>[0]),
      count: Number(r.n),
      requested: fmt(r.requested, r.decimals),
      paid: fmt(r.paid, r.decimals),
      fees: fmt(r.fees, r.decimals),
      net: fmt(r.net, r.decimals),
    })),
    fiat: fiat.rows.map((r) => ({
      currency: r.currency,
      status:
        r.status === null
          ? 'UNKNOWN'
          : checkoutStatusName(r.status as Parameters<typeof checkoutStatusName>[0]),
      count: Number(r.n),
      amount: fmt(r.cents, 2),
    })),
    perDay: perDay.rows.map((r) => ({
      day: r.day,
      chainId: Number(r.chain_id),
      symbol: r.symbol,
      count: Number(r.n),
      paid: fmt(r.paid, r.decimals),
      fees: fmt(r.fees, r.decimals),
      net: fmt(r.net, r.decimals),
    })),
    underpaid: diffs.rows.filter((r) => BigInt(r.p) < BigInt(r.r)).map(difference),
    overpaid: diffs.rows.filter((r) => BigInt(r.p) > BigInt(r.r)).map(difference),
  };
}

async function payoutTotals(tx: DbExecutor, input: ReportInput): Promise<PayoutTotal[]> {
  const from = input.period.from.toISOString();
  const to = input.period.to.toISOString();
  const tokens = tokensTable(input.chains);
  const { rows } = await tx.execute<{
    store_id: string;
    chain_id: string;
    symbol: string;
    decimals: number;
    outcome: PayoutTotal['outcome'];
    n: string;
    amount: string;
  }>(sql`
    with events as (
      select p.store_id, p.chain_id, p.token_address, o.outcome, o.at,
             case when o.outcome = 'funded' then coalesce(p.funded_amount, p.amount) else p.amount end as amount
      from payouts p
      -- A link closes once: rows from before the close was guarded can hold both cancelled_at and
      -- expired_at, and count under the earlier of the two only.
      cross join lateral (values ('funded', p.funded_at), ('claimed', p.claimed_at),
                                 ('cancelled', case when p.expired_at is null or p.cancelled_at <= p.expired_at then p.cancelled_at end),
                                 ('expired', case when p.cancelled_at is null or p.expired_at < p.cancelled_at then p.expired_at end),
                                 ('refunded', p.refunded_at)) as o(outcome, at)
      where p.claim_link_id is not null and o.at >= ${from}::timestamptz and o.at < ${to}::timestamptz
        and ${storeFilter(sql`p.store_id`, input.storeId)}
    )
    select e.store_id, e.chain_id::text, tk.symbol, tk.decimals, e.outcome, count(*)::text as n,
           trunc(sum(e.amount::numeric) * tk.unit)::text as amount
    from events e join ${tokens} on tk.chain_id = e.chain_id and tk.token = lower(e.token_address)
    group by 1, 2, 3, 4, 5, tk.unit order by 1, 2, 3, 5`);
  const fees = await tx.execute<{ store_id: string; chain_id: string; symbol: string; fees: string }>(sql`
    select a.store_id, a.chain_id::text, a.symbol, sum(p.amount)::text as fees
    from ledger_accounts a join ledger_postings p on p.account_id = a.id
    where a.code like 'expense:payout\\_fees:%' and ${storeFilter(sql`a.store_id`, input.storeId)}
      and p.occurred_at >= ${from}::timestamptz and p.occurred_at < ${to}::timestamptz
    group by 1, 2, 3`);
  const feeOf = new Map(fees.rows.map((f) => [`${f.store_id}:${f.chain_id}:${f.symbol}`, f.fees]));
  return rows.map((r) => ({
    storeId: r.store_id,
    chainId: Number(r.chain_id),
    symbol: r.symbol,
    outcome: r.outcome,
    count: Number(r.n),
    amount: fmt(r.amount, r.decimals),
    fees:
      r.outcome === 'funded'
        ? fmt(feeOf.get(`${r.store_id}:${r.chain_id}:${r.symbol}`) ?? '0', r.decimals)
        : '0',
  }));
}

/** The suspense block: items in suspense now that arrived before the period's end, classified apart. */
async function suspenseSection(tx: DbExecutor, input: ReportInput): Promise<SuspenseSection> {
  const rows = await suspenseTotals(tx, { storeId: input.storeId, before: input.period.to });
  const total = (r: (typeof rows)[number]) => ({
    storeId: r.storeId,
    chainId: r.chainId,
    symbol: r.symbol,
    token: r.token,
    count: r.count,
    amount: formatDecimalAmount(r.amount, r.decimals),
  });
  return {
    unclassified: rows.filter((r) => r.classification === null).map(total),
    classified: rows.flatMap((r) =>
      r.classification === null ? [] : [{ classification: r.classification, ...total(r) }],
    ),
  };
}

/** The corrections block: those made or undone in the period. */
async function correctionRows(tx: DbExecutor, input: ReportInput): Promise<CorrectionRow[]> {
  const list = await correctionsInPeriod(tx, {
    storeId: input.storeId,
    from: input.period.from,
    to: input.period.to,
  });
  return list.map((c) => ({
    id: c.id.toString(),
    findingId: c.findingId.toString(),
    findingKind: c.findingKind,
    intentId: c.refId,
    entryId: c.entryId.toString(),
    storeId: c.storeId,
    chainId: c.chainId,
    symbol: c.symbol,
    fromAccount: c.fromAccount,
    toAccount: c.toAccount,
    amount: formatDecimalAmount(c.amount, c.decimals),
    note: c.note,
    madeBy: c.madeBy,
    madeAt: c.madeAt.toISOString(),
    undoneAt: iso(c.undoneAt),
    undoneBy: c.undoneBy,
    undoNote: c.undoNote,
  }));
}

async function trialBalanceRows(tx: DbExecutor): Promise<TrialBalanceRow[]> {
  return (await trialBalance(tx)).map((l) => {
    const [chainId = '0', token = ''] = l.asset.split(':');
    return {
      chainId: Number(chainId),
      symbol: l.symbol,
      token,
      debits: formatDecimalAmount(l.debits, l.decimals),
      credits: formatDecimalAmount(l.credits, l.decimals),
      net: formatDecimalAmount(l.net, l.decimals),
    };
  });
}

function proofRow(p: BalanceProof, at: Date): ProofRow {
  return {
    chainId: p.chainId,
    symbol: p.symbol,
    token: p.token.toLowerCase(),
    wallet: p.wallet,
    role: p.role,
    blockNumber: p.blockNumber?.toString() ?? null,
    ledgerBalance: formatDecimalAmount(p.ledgerBalance, p.decimals),
    chainBalance: p.chainBalance === null ? null : formatDecimalAmount(p.chainBalance, p.decimals),
    result: p.ok === true ? 'pass' : p.ok === false ? 'fail' : 'error',
    error: p.error,
    provedAt: at.toISOString(),
  };
}
