import type { FindingRow } from '../../findings/finding.ts';

/**
 * The reconciliation report for one period and store (docs/report-schema.md): what every format
 * (JSON, CSV, Markdown, HTML) renders. Plain data only, so a renderer is a pure function of it.
 *
 * Amounts are exact decimal strings in token units, canonical (no trailing zeros: "12.5" for
 * 12.5 USDC, "-3" for a credit of 3), never numbers; fiat amounts are decimal strings in the
 * currency's units ("19.99"). Times are ISO 8601 UTC strings. Token symbol and chain id are always their own
 * fields, so a CSV row can be imported without parsing an account code.
 */
export const REPORT_SCHEMA = 'stablebooks.reconciliation-report';
export const REPORT_VERSION = 2;
/** How many findings of each kind each list of the report carries; the rest are in findings.csv. */
export const FINDINGS_SAMPLE_PER_KIND = 100;
/** Where the full findings lists are, relative to the report's folder (written with the CSV format). */
export const FINDINGS_FULL_LIST = 'csv/findings.csv';

export interface ReconReport {
  schema: typeof REPORT_SCHEMA;
  version: typeof REPORT_VERSION;
  generatedAt: string;
  /** Half-open: from <= t < to. */
  period: { from: string; to: string };
  /** null: every store. */
  storeId: string | null;
  /**
   * true when the books are proven: every assertion (balance proofs, trial balance) passed and no
   * check failed to read its source. Clearing and matching findings do not fail a run; they are
   * listed for a person.
   */
  passed: boolean;
  checks: CheckResult[];
  accounts: AccountStatement[];
  payments: PaymentTotals;
  payouts: PayoutTotal[];
  suspense: SuspenseSection;
  /** A person's corrections made or undone in the period (`stablebooks adjust`), oldest first. */
  corrections: CorrectionRow[];
  findings: FindingsSection;
  balanceProofs: ProofRow[];
  trialBalance: TrialBalanceRow[];
  ledgerChain: LedgerChainSection;
  /**
   * Per store of the report: the period's figures in the store's functional currency
   * (docs/accounting.md, "Valuation"). Empty when the run was given no stores to value.
   */
  valuation: StoreValuationSection[];
}

/**
 * One store's period in its functional currency, beside the same accounts' token figures. Revenue,
 * fees and payouts are sums of the valued postings of the named account kinds in [from, to), as the
 * accounts carry them: debit-positive (revenue, a credit, is negative), as `hledger bal -B` shows
 * the valued export's accounts over the same period. The FX figures are as of `to`.
 */
export interface StoreValuationSection {
  storeId: string;
  /** ISO 4217 code; every `value` below is a decimal in it with its minor digits ("-23.08"). */
  currency: string;
  /** The UTC day whose rates revalue the holdings (the period's last day). */
  closingDate: string;
  /** income:sales. */
  revenue: FiatFigure;
  /** expense:service_fees. */
  serviceFees: FiatFigure;
  /** expense:payouts (claim links their recipients claimed). */
  payouts: FiatFigure;
  /** expense:payout_fees. */
  payoutFees: FiatFigure;
  /** The period's fx:rounding lines summed (debit-positive, like an account); no tokens. */
  fxRounding: FiatFigure;
  /**
   * The holding accounts' closing balances at the closing rate minus their valued cost (every
   * valued posting before `to`): positive is an unrealised gain. `tokens` are the closing
   * balances; `unvalued` counts the holding accounts that could not be revalued.
   */
  fxUnrealised: FiatFigure;
  /** The FX result, gain positive: fxUnrealised − fxRounding; null when either is. */
  fxResult: string | null;
  /** Days and coins without a rate among the store's postings before `to`. */
  missingRates: { date: string; symbol: string }[];
}

export interface FiatFigure {
  /** The account kinds summed (`income:sales`), of this store, every chain and token. */
  accounts: string[];
  /** The same accounts' token figure per chain and token (exact decimal strings). */
  tokens: { chainId: number; symbol: string; amount: string }[];
  /** The value, a decimal string in the currency; null (unvalued) when `unvalued` > 0, never 0. */
  value: string | null;
  /** Postings (accounts, for fxUnrealised) no rate valued. */
  unvalued: number;
}

/**
 * The entries' hash chain (docs/accounting.md, "The entries' hash chain"). A head published here
 * lets anyone holding this report detect a later rewrite of any entry it covers:
 * `stablebooks ledger verify --head <seq>:<hash>` recomputes the chain up to seal `seq` from the
 * entries as they are then, and fails when it does not give `hash`.
 */
export interface LedgerChainSection {
  /** The last seal written before period.to (by its sealing time); null when none was. */
  atPeriodEnd: ChainHeadRow | null;
  /**
   * The last seal when the report was read (at generatedAt). The run's check recomputed the chain
   * moments before, in its own snapshot: up to this seal or a few seals short of it.
   */
  atGeneration: ChainHeadRow | null;
}

export interface ChainHeadRow {
  /** The seal's number, a decimal string; also how many entries the chain covers up to it (no gaps). */
  seq: string;
  /** sha256, 64 hex digits. */
  hash: string;
  /** The entry of that seal. */
  entryId: string;
  sealedAt: string;
}

export interface CheckResult {
  /** e.g. `clearing.in_transit`, `matching.intents`, `assertions.balance_proofs`. */
  name: string;
  layer: 'clearing' | 'matching' | 'assertions';
  /** pass: nothing wrong; fail: findings or a failed assertion; error: a source could not be read. */
  status: 'pass' | 'fail' | 'error';
  /** How many findings (or failed rows) this check produced. */
  count: number;
  detail: string;
}

/** One account over the period, like a bank statement line. */
export interface AccountStatement {
  code: string;
  kind: string;
  type: 'asset' | 'liability' | 'income' | 'expense' | 'equity';
  storeId: string;
  chainId: number;
  symbol: string;
  token: string;
  decimals: number;
  /** Balances are debit-positive (a credit balance is negative), as in the ledger. */
  opening: string;
  debits: string;
  credits: string;
  closing: string;
}

export interface PaymentTotals {
  /** Intents created in the period, by store, chain, token and status. */
  byStatus: PaymentStatusTotal[];
  /** Fiat-priced intents by currency and status (amount_cents as a decimal in the currency). */
  fiat: FiatTotal[];
  /** Confirmed payments per UTC day (by confirmation time) and token. */
  perDay: PaymentDayTotal[];
  underpaid: PaymentDifference[];
  overpaid: PaymentDifference[];
}

export interface PaymentStatusTotal {
  storeId: string;
  chainId: number;
  symbol: string;
  /** The service's status name: CREATED, VIEWED, ON_CHAIN, CONFIRMED, … or UNKNOWN (not yet fetched). */
  status: string;
  count: number;
  requested: string;
  paid: string;
  fees: string;
  net: string;
}

export interface FiatTotal {
  currency: string;
  status: string;
  count: number;
  amount: string;
}

export interface PaymentDayTotal {
  /** YYYY-MM-DD (UTC). */
  day: string;
  chainId: number;
  symbol: string;
  count: number;
  paid: string;
  fees: string;
  net: string;
}

export interface PaymentDifference {
  intentId: string;
  storeId: string;
  chainId: number;
  symbol: string;
  requested: string;
  paid: string;
  /** paid − requested (negative when underpaid). */
  difference: string;
  confirmedAt: string | null;
}

export interface PayoutTotal {
  storeId: string;
  chainId: number;
  symbol: string;
  /** What happened to the links in the period: funded, claimed, cancelled, expired, refunded. */
  outcome: 'funded' | 'claimed' | 'cancelled' | 'expired' | 'refunded';
  count: number;
  amount: string;
  /** Funding fees (expense:payout_fees) of these links; "0" for outcomes other than funded. */
  fees: string;
}

/**
 * Money rule 9 booked to suspense (transfers into a watched wallet that nothing explains), as of
 * generatedAt, over the transfers that arrived before period.to: the part still waiting for a
 * person, apart from the part a person classified (docs/accounting.md, rule 10).
 */
export interface SuspenseSection {
  /** Items in suspense with no classification, per store, chain and token. */
  unclassified: SuspenseTotal[];
  /** Items a person classified, per classification, store, chain and token. */
  classified: SuspenseClassifiedTotal[];
}

export interface SuspenseTotal {
  storeId: string;
  chainId: number;
  symbol: string;
  token: string;
  count: number;
  /** The items' values, positive (money that came in). */
  amount: string;
}

export interface SuspenseClassifiedTotal extends SuspenseTotal {
  /** owner_contribution, owner_withdrawal, refund_due or income_other (open-ended). */
  classification: string;
}

/**
 * A person's correction of a leftover the rules left for a person (docs/accounting.md,
 * "Corrections"): how much moved from which account kind to which, for which finding, who and why;
 * undone ones say when, by whom and why.
 */
export interface CorrectionRow {
  id: string;
  findingId: string;
  findingKind: string;
  /** The intent the finding names. */
  intentId: string;
  entryId: string;
  storeId: string;
  chainId: number;
  symbol: string;
  fromAccount: string;
  toAccount: string;
  /** Token units moved, positive. */
  amount: string;
  note: string;
  madeBy: string;
  madeAt: string;
  undoneAt: string | null;
  undoneBy: string | null;
  undoNote: string | null;
}

/**
 * The findings of the period: counts of every finding, and the first FINDINGS_SAMPLE_PER_KIND of
 * each kind in each list (oldest first). A busy period can hold ~100k findings; the report
 * stays small and the full lists are streamed to findings.csv (`fullList`).
 */
export interface FindingsSection {
  /** How many findings each list holds in full. */
  counts: { new: number; open: number; resolved: number };
  /** Per kind and severity: how many of each list (full counts). */
  byKind: { kind: string; severity: string; new: number; open: number; resolved: number }[];
  /** Unresolved findings of the new and open lists per kind, by age at generatedAt (full counts), on the database clock that stamps first_seen_at. */
  unresolvedByAge: { kind: string; lt1h: number; h1to1d: number; d1to7d: number; gt7d: number }[];
  /** At most this many findings of each kind in each of the lists below. */
  samplePerKind: number;
  /**
   * Where every finding of the three lists is: a path relative to the report's folder
   * (FINDINGS_FULL_LIST), or null when the run did not write the CSV format.
   */
  fullList: string | null;
  /** First seen in the period (sample: the oldest per kind, ordered by first seen). */
  new: FindingRow[];
  /** First seen before the period and still open at its end (sample). */
  open: FindingRow[];
  /** Resolved in the period (sample). */
  resolved: FindingRow[];
}

export interface ProofRow {
  chainId: number;
  symbol: string;
  token: string;
  wallet: string;
  role: 'merchant' | 'custody';
  blockNumber: string | null;
  ledgerBalance: string;
  chainBalance: string | null;
  /** pass: equal; fail: they differ; error: could not be proven (see error). */
  result: 'pass' | 'fail' | 'error';
  error: string | null;
  provedAt: string;
}

export interface TrialBalanceRow {
  chainId: number;
  symbol: string;
  token: string;
  debits: string;
  credits: string;
  /** Must be "0". */
  net: string;
}
