import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { storableFields, toJsonb } from '../db/storableJson.ts';
import { entryMoved, movedData, recordReversal } from '../events/announcements.ts';
import type { FindingDraft } from '../findings/finding.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import { type PostedEntry, postEntry, reverseEntry } from '../ledger/postEntry.ts';
import {
  CHECKOUT_FAILURE_STATUSES,
  type CheckoutFailureStatus,
  checkoutConfirmedKey,
  checkoutTerminalFailure,
} from '../ledger/rules/checkoutRules.ts';
import type { CheckoutIntent } from '../svc/models/checkoutIntent.ts';
import { CheckoutStatus, isTerminalCheckoutStatus } from '../svc/models/checkoutStatus.ts';
import type { CheckoutWebhookPayload } from '../svc/models/checkoutWebhook.ts';
import { BOOKING_FINDINGS, bookConfirmation } from './bookConfirmation.ts';
import type { DeferredBookings } from './deferredBookings.ts';
import {
  awaitsSweepHash,
  type IntentRow,
  intentRowColumns,
  type PaymentProofDeps,
  proveIntentPayment,
} from './proveIntentPayment.ts';
import { provenInSuspense, provenInWallet, returnProvenFromSuspense } from './provenPaymentSuspense.ts';
import { checkWebhookMismatch, WEBHOOK_MISMATCH, type WebhookMismatchDetails } from './webhookMismatch.ts';

/**
 * The one function that applies what we learnt about a checkout intent, whatever the source
 * (webhook, poll, create, track): record the facts and the status history, compare a webhook
 * with the API, and post rule 1 (or reverse it, rule 4), all in the caller's transaction, so the
 * fact and its entry commit together and a replay changes nothing.
 */
export type IntentSource = 'webhook' | 'poll' | 'create' | 'track';

export interface IntentObservation {
  storeId: string;
  /** The full intent from GET /v1/checkout_intents/{id}. */
  intent: CheckoutIntent;
  source: IntentSource;
  observedAt: Date;
  /** The webhook that prompted this observation, compared with the API's view. */
  webhook?: CheckoutWebhookPayload;
}

export interface ApplyResult {
  previousStatus: number | null;
  status: number;
  terminal: boolean;
  /**
   * Whether nothing more is to be learnt from the service: a terminal status whose facts are in
   * the books. A CONFIRMED intent that rule 1 could not book yet is terminal but not settled, and
   * its polls go on.
   */
  settled: boolean;
  posted: PostedEntry | null;
  reversed: PostedEntry | null;
  findings: FindingDraft[];
}

/**
 * What rules 1, 2 and 4 need: the registry, the stores' wallets (rule 2), the account cache; and,
 * in a webhook batch, the batch's deferred rule-1 writes.
 */
type SnapshotDeps = PaymentProofDeps & { deferred?: DeferredBookings };

export async function applyIntentSnapshot(
  tx: DbExecutor,
  deps: SnapshotDeps,
  obs: IntentObservation,
  /**
   * The intent's row as the caller's transaction locked it, unchanged since (lockIntents): saves
   * locking it again. Never the row of an intent this transaction has already applied.
   */
  locked?: LockedIntent,
): Promise<ApplyResult> {
  const prepared = await prepareObservation(tx, obs, locked);
  if ('stale' in prepared) return prepared.stale;
  const rows = await writeFacts(tx, [prepared]);
  return applyWritten(tx, deps, prepared, rows.get(prepared.id));
}

/**
 * applyIntentSnapshot for a batch's observations, in one transaction: the first observation of
 * each intent is decided first and all their facts are written in one statement (writeFacts), then
 * each one's findings and rules run in order; a later observation of an intent already applied
 * goes after them, one at a time, reading what the first wrote (and booked: the batch's deferred
 * rule-1 writes are flushed before). Results in the observations' order.
 */
export async function applyIntentSnapshots(
  tx: DbExecutor,
  deps: SnapshotDeps,
  items: ReadonlyArray<{ obs: IntentObservation; locked?: LockedIntent }>,
): Promise<ApplyResult[]> {
  const results: ApplyResult[] = new Array(items.length);
  const seen = new Set<string>();
  const later: number[] = [];
  const firsts: Array<{ n: number; prepared: PreparedObservation }> = [];
  for (const [n, { obs, locked }] of items.entries()) {
    const id = obs.intent.all_svc_checkout_intent_id;
    if (seen.has(id)) {
      later.push(n);
      continue;
    }
    seen.add(id);
    const prepared = await prepareObservation(tx, obs, locked);
    if ('stale' in prepared) results[n] = prepared.stale;
    else firsts.push({ n, prepared });
  }
  const rows = await writeFacts(
    tx,
    firsts.map((f) => f.prepared),
  );
  for (const { n, prepared } of firsts)
    results[n] = await applyWritten(tx, deps, prepared, rows.get(prepared.id));
  if (later.length > 0) await deps.deferred?.flush(tx);
  for (const n of later) {
    const item = items[n] as (typeof items)[number];
    results[n] = await applyIntentSnapshot(tx, deps, item.obs);
  }
  return results;
}

/** An observation decided under the intent's lock, its facts not written yet. */
interface PreparedObservation {
  id: string;
  obs: IntentObservation;
  /** The read, with what PostgreSQL cannot store replaced. */
  intent: CheckoutIntent;
  /** What the columns take (factsToStore). */
  facts: CheckoutIntent;
  change: StatusChange;
}

async function prepareObservation(
  tx: DbExecutor,
  obs: IntentObservation,
  locked: LockedIntent | undefined,
): Promise<{ stale: ApplyResult } | PreparedObservation> {
  // Free text from the service (user_name, order_description...) may hold what PostgreSQL refuses.
  const intent = storableFields(obs.intent);
  const id = intent.all_svc_checkout_intent_id;
  const before = locked ?? (await lockIntent(tx, id, obs));
  const stale =
    staleObservationResult(before, intent.status, obs.observedAt) ??
    (await pollOfLeftStatus(tx, id, before, intent.status, obs));
  if (stale) return { stale };
  const change = statusChange(before, intent.status, obs);
  const facts = await factsToStore(tx, intent);
  return { id, obs, intent, facts, change };
}

/** The findings and ledger rules of an observation whose facts are written (`row`). */
async function applyWritten(
  tx: DbExecutor,
  deps: SnapshotDeps,
  { id, obs, intent, facts, change }: PreparedObservation,
  row: WrittenRow | undefined,
): Promise<ApplyResult> {
  // The intent's store is its row's (set when it was first tracked), whichever store's key read
  // it now: rules 1, 2 and 4 and the findings all book to that one store.
  const storeId = row?.store_id ?? obs.storeId;
  const written = { id, storeId, intent, facts, row, revision: row?.confirmed_revision ?? 0 };

  const findings = await checkWebhookMismatch(tx, obs.webhook, facts, row?.open_webhook_mismatch);
  findings.push(...contradictedFailure(id, change, obs.source));
  findings.push(...changedConfirmedFacts(id, intent, row));
  const ledger = await applyLedgerRules(tx, deps, obs, change, written);
  findings.push(...ledger.findings);
  for (const finding of findings) await recordFinding(tx, finding, storeId);
  const { previousStatus, status, terminal } = change;
  const { posted, reversed, settledBy } = ledger;
  return { previousStatus, status, terminal, settled: settledBy !== null, posted, reversed, findings };
}

/** The intent's row as last committed, read under its lock. */
export interface LockedIntent {
  status: number | null;
  status_changed_at: Date | null;
  confirmed_at: Date | null;
  settled_by: string | null;
}

/**
 * lockIntent for several intents in one round trip, in id order (so two callers lock them in one
 * order): each row made if missing and locked, and returned by id as last committed. For a batch
 * whose observations then apply each intent once with its row (applyIntentSnapshot's `locked`).
 */
export async function lockIntents(
  tx: DbExecutor,
  observations: ReadonlyArray<Pick<IntentObservation, 'storeId' | 'source' | 'observedAt'> & { id: string }>,
): Promise<Map<string, LockedIntent>> {
  const first = new Map<string, (typeof observations)[number]>();
  for (const o of observations) if (!first.has(o.id)) first.set(o.id, o);
  const rows = [...first.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const locked = await executePrepared<LockedIntent & { id: string }>(
    tx,
    sql`
    insert into checkout_intents as c (id, store_id, tracked_via, tracked_at)
    select x.id, x.store_id, x.source, x.observed_at
    from unnest(${sql.param(rows.map((r) => r.id))}::text[], ${sql.param(rows.map((r) => r.storeId))}::text[],
                ${sql.param(rows.map((r) => r.source))}::text[],
                ${sql.param(rows.map((r) => r.observedAt.toISOString()))}::timestamptz[])
           with ordinality as x(id, store_id, source, observed_at, n)
    order by x.n
    on conflict (id) do update set id = c.id
    returning c.id, c.status, c.status_changed_at, c.confirmed_at, c.settled_by`,
  );
  return new Map(locked.rows.map(({ id, ...row }) => [id, row]));
}

async function lockIntent(
  tx: DbExecutor,
  id: string,
  obs: IntentObservation,
): Promise<LockedIntent | undefined> {
  // Make sure the row exists and lock it, in one round trip: ON CONFLICT DO UPDATE locks the row
  // (waiting for a concurrent observer, like FOR UPDATE) and returns it as last committed, so
  // concurrent observers of one intent go one at a time and the second sees what the first wrote
  // (confirmed_at above all). The update sets nothing that changes. Only the row is read here:
  // anything else this statement read would come from its snapshot, taken before the lock wait.
  const locked = await executePrepared<LockedIntent>(
    tx,
    sql`
    insert into checkout_intents as c (id, store_id, tracked_via, tracked_at)
    values (${id}, ${obs.storeId}, ${obs.source}, ${obs.observedAt.toISOString()}::timestamptz)
    on conflict (id) do update set id = c.id
    returning c.status, c.status_changed_at, c.confirmed_at, c.settled_by`,
  );
  return locked.rows[0];
}

/** What an observation that is not stale does to the intent's status, decided under the lock. */
interface StatusChange {
  previousStatus: number | null;
  status: CheckoutStatus;
  terminal: boolean;
  changed: boolean;
  wasFailure: boolean;
  confirmedAt: Date | null;
  settledBy: string | null;
}

/** The result to return, the facts unchanged, when the observation is stale; null when it is not. */
function staleObservationResult(
  before: LockedIntent | undefined,
  status: CheckoutStatus,
  observedAt: Date,
): ApplyResult | null {
  const previousStatus = before?.status ?? null;
  const wasTerminal = previousStatus !== null && isTerminalCheckoutStatus(previousStatus as CheckoutStatus);
  if (
    wasTerminal &&
    (!isTerminalCheckoutStatus(status) ||
      (status !== previousStatus &&
        before?.status_changed_at != null &&
        observedAt < new Date(before.status_changed_at)))
  ) {
    // A stale observation (a poll answered before the terminal status was recorded): a terminal
    // status never changes back, nor to another terminal status on an older read, so the facts
    // stay as they are.
    return staleResult(previousStatus, before);
  }
  return null;
}

/** What a stale observation returns: the terminal status as recorded, nothing written. */
function staleResult(previousStatus: number, before: LockedIntent | undefined): ApplyResult {
  return {
    previousStatus,
    status: previousStatus,
    terminal: true,
    settled: before?.settled_by != null,
    posted: null,
    reversed: null,
    findings: [],
  };
}

/**
 * A poll that reads the terminal status the intent was at before a webhook moved it to the
 * terminal status it is at now: a read of a replica behind the primary, from before the change the
 * service pushed (the simulator's `lag`, seed 52968: CONFIRMED, CANCELED, CONFIRMED by webhook,
 * then a poll read CANCELED minutes later, the books went back to it and polled no more). Treated
 * as stale, like an older read. A change learnt by polls alone is still applied, and a webhook is
 * not subject to this (its read follows the push). Read only on this rare path: a poll naming
 * another terminal status than the row's.
 */
async function pollOfLeftStatus(
  tx: DbExecutor,
  id: string,
  before: LockedIntent | undefined,
  status: CheckoutStatus,
  obs: IntentObservation,
): Promise<ApplyResult | null> {
  const previousStatus = before?.status ?? null;
  if (
    obs.source !== 'poll' ||
    previousStatus === null ||
    previousStatus === status ||
    !isTerminalCheckoutStatus(previousStatus as CheckoutStatus) ||
    !isTerminalCheckoutStatus(status)
  )
    return null;
  const last = await tx.execute<{ from_status: number | null; source: string }>(sql`
    select from_status, source from checkout_intent_status_history
    where intent_id = ${id} order by id desc limit 1`);
  const pushed = last.rows[0];
  if (pushed?.source !== 'webhook' || pushed.from_status !== status) return null;
  return staleResult(previousStatus, before);
}

function statusChange(
  before: LockedIntent | undefined,
  status: CheckoutStatus,
  obs: IntentObservation,
): StatusChange {
  const previousStatus = before?.status ?? null;
  const wasFailure = previousStatus !== null && isFailureStatus(previousStatus);
  const terminal = isTerminalCheckoutStatus(status);
  const confirmedAt =
    status === CheckoutStatus.CONFIRMED && wasFailure
      ? obs.observedAt // confirmed again: the new entry is dated when we learnt it, not backdated
      : before?.confirmed_at != null
        ? new Date(before.confirmed_at)
        : status === CheckoutStatus.CONFIRMED
          ? obs.observedAt
          : null;
  const settledBy = before?.settled_by ?? (terminal ? obs.source : null);
  const changed = previousStatus !== status;
  return { previousStatus, status, terminal, changed, wasFailure, confirmedAt, settledBy };
}

/**
 * What the columns take: the read, except that a CONFIRMED read without its amounts (a duplicate
 * webhook or a replay whose API read lacks them) never blanks the amounts rule 1 booked. With a
 * live rule-1 entry the stored amounts stay the intent's facts, so rule 1 below is a replay, the
 * intent stays settled and no `confirmed_without_amounts` is raised. raw_payload keeps the read
 * as sent. Read only on this rare path, after the lock (READ COMMITTED: a reversal committed
 * by an observer we waited for is seen).
 */
async function factsToStore(tx: DbExecutor, intent: CheckoutIntent): Promise<CheckoutIntent> {
  return intent.status === CheckoutStatus.CONFIRMED && lacksAmounts(intent)
    ? { ...intent, ...(await bookedAmounts(tx, intent.all_svc_checkout_intent_id)) }
    : intent;
}

/** The intent's row after the facts update, with what rules 1 and 2 and the webhook check read. */
type WrittenRow = IntentRow & {
  has_final_logs: boolean;
  confirmed_revision: number;
  open_booking_findings: string[];
  open_webhook_mismatch: WebhookMismatchDetails | null;
};

async function writeFacts(
  tx: DbExecutor,
  observations: readonly PreparedObservation[],
): Promise<Map<string, WrittenRow>> {
  if (observations.length === 0) return new Map();
  // A transaction once reported stays a fact: a later read without its hashes (a bare API answer)
  // does not blank them, since rule 2, the payment verifier and matching read them from the row;
  // a different hash replaces them. Once rule 1 has booked (any revision, reversed or not), the
  // facts it booked from stay: the chain, the token (contract and symbol) and the recipient tx_to.
  // Rule 2 proves the payment with them and a re-booking after a failure books in them; a read
  // that names others is a disagreement (changedConfirmedFacts), not a new payment.
  // The facts and, when the status changed, its history row, for every observation in one round
  // trip; each row comes back for rule 2 below, with the intent's reversed rule-1 entries so far (a
  // confirmation after a failure is booked as the next revision). Counted here, not in the lock
  // statement: this statement's snapshot is taken after the locks were granted (READ COMMITTED),
  // so it sees the reversal of an observer we waited for; the lock statement's would not, and a
  // CONFIRMED applied just after a reversal would re-post under the reversed entry's key.
  const rows = JSON.stringify(
    observations.map(({ intent, facts, change, obs }, n) => ({
      n,
      id: intent.all_svc_checkout_intent_id,
      currency: intent.currency,
      currency_symbol: intent.currency_symbol,
      amount_cents: intent.amount_cents?.toString() ?? null,
      chain_id: intent.chain_id,
      amount_coins: intent.amount_coins,
      coin_symbol: intent.coin_symbol,
      coin_contract: intent.coin_contract,
      currency_rate: intent.currency_rate,
      status: change.status,
      previous_status: change.previousStatus,
      changed: change.changed,
      order_id: intent.order_id,
      order_description: intent.order_description,
      user_id: intent.user_id,
      user_name: intent.user_name,
      error_message: intent.error_message,
      tx_hash: intent.tx_hash,
      tx_hash_2: intent.tx_hash_2,
      tx_from: intent.tx_from,
      tx_to: intent.tx_to,
      actual_paid_amount: facts.actual_paid_amount,
      service_fee_amount: facts.service_fee_amount,
      net_income_amount: facts.net_income_amount,
      payment_method_type: intent.payment_method_type,
      accepted_stable_coins: intent.accepted_stable_coins,
      observed_at: obs.observedAt.toISOString(),
      confirmed_at: change.confirmedAt?.toISOString() ?? null,
      settled_by: change.settledBy,
      source: obs.source,
    })),
  );
  // raw_payload as sent (toJsonb), observation n's at index n.
  const payloads = `[${observations.map((o) => toJsonb(o.intent)).join(',')}]`;
  const written = await executePrepared<WrittenRow>(
    tx,
    sql`
    with x as (
      select * from jsonb_to_recordset(${rows}::jsonb) as x(
        n int, id text, currency int, currency_symbol text, amount_cents bigint, chain_id bigint,
        amount_coins text, coin_symbol text, coin_contract text, currency_rate text, status int,
        previous_status int, changed boolean, order_id text, order_description text, user_id text,
        user_name text, error_message text, tx_hash text, tx_hash_2 text, tx_from text, tx_to text,
        actual_paid_amount text, service_fee_amount text, net_income_amount text,
        payment_method_type int, accepted_stable_coins int, observed_at timestamptz,
        confirmed_at timestamptz, settled_by text, source text)
    ), u as (
      update checkout_intents c set
        currency = x.currency, currency_symbol = x.currency_symbol, amount_cents = x.amount_cents,
        chain_id = case when b.booked then c.chain_id else x.chain_id end,
        amount_coins = x.amount_coins,
        coin_symbol = case when b.booked then c.coin_symbol else x.coin_symbol end,
        coin_contract = case when b.booked then c.coin_contract else x.coin_contract end,
        currency_rate = x.currency_rate, status = x.status, order_id = x.order_id,
        order_description = x.order_description, user_id = x.user_id, user_name = x.user_name,
        error_message = x.error_message,
        tx_hash = coalesce(x.tx_hash, c.tx_hash), tx_hash_2 = coalesce(x.tx_hash_2, c.tx_hash_2),
        tx_from = coalesce(x.tx_from, c.tx_from),
        tx_to = case when b.booked then c.tx_to else x.tx_to end,
        actual_paid_amount = x.actual_paid_amount,
        service_fee_amount = x.service_fee_amount, net_income_amount = x.net_income_amount,
        payment_method_type = x.payment_method_type, accepted_stable_coins = x.accepted_stable_coins,
        raw_payload = ${payloads}::jsonb -> x.n,
        status_changed_at = case when x.changed then x.observed_at else c.status_changed_at end,
        confirmed_at = x.confirmed_at, settled_by = x.settled_by, updated_at = now()
      from x
      -- A probe per intent by (ref_type, ref_id, kind), whatever the planner believes of the
      -- recordset's size (an EXISTS would be planned as a hash of every confirmation).
      left join lateral (select true as booked from ledger_entries e
                         where e.ref_type = 'checkout_intent' and e.ref_id = x.id
                           and e.kind = 'checkout.confirmed' limit 1) b on true
      where c.id = x.id
      returning c.*
    ), h as (
      insert into checkout_intent_status_history (intent_id, from_status, to_status, source, observed_at)
      select x.id, x.previous_status, x.status, x.source, x.observed_at from x where x.changed order by x.n
    )
    select ${intentRowColumns},
      (select count(*)::int from ledger_entries e
       where e.ref_type = 'checkout_intent' and e.ref_id = u.id and e.kind = 'checkout.confirmed.reversal') as confirmed_revision,
      (select coalesce(array_agg(f.kind), '{}') from findings f
       where f.ref_type = 'checkout_intent' and f.ref_id = u.id and f.resolved_at is null
         and f.kind = any(${sql.param([...BOOKING_FINDINGS])}::text[])) as open_booking_findings,
      (select f.details from findings f
       where f.ref_type = 'checkout_intent' and f.ref_id = u.id and f.resolved_at is null
         and f.kind = ${WEBHOOK_MISMATCH}) as open_webhook_mismatch,
      exists (select 1 from chain_transfers t
              where t.chain_id = u.chain_id and t.tx_hash = lower(coalesce(u.tx_hash_2, u.tx_hash))
                and t.state = 'final') as has_final_logs
    from u`,
  );
  return new Map(written.rows.map((row) => [row.id, row]));
}

function contradictedFailure(id: string, change: StatusChange, source: IntentSource): FindingDraft[] {
  const { wasFailure, previousStatus, status, terminal } = change;
  if (!(wasFailure && status !== previousStatus && terminal)) return [];
  // The service contradicts a terminal failure (CONFIRMED -> failure is rule 4's own finding).
  return [
    {
      kind: 'terminal_status_changed',
      severity: 'critical',
      ref: { type: 'checkout_intent', id },
      details: { from: previousStatus, to: status, source },
    },
  ];
}

/**
 * A read naming another chain, token contract or recipient (tx_to) than rule 1 booked from: the
 * row kept the booked ones (writeFacts), so they differ from the read. A critical finding, for a
 * person: the service contradicts a confirmation in the books. A field the read leaves out is no
 * disagreement, nor an address written in another case.
 */
function changedConfirmedFacts(
  id: string,
  intent: CheckoutIntent,
  row: WrittenRow | undefined,
): FindingDraft[] {
  if (!row) return [];
  const differences: Record<string, { booked: unknown; observed: unknown }> = {};
  const booked = row.chain_id === null ? null : Number(row.chain_id);
  if (intent.chain_id !== null && intent.chain_id !== booked) {
    differences.chain_id = { booked, observed: intent.chain_id };
  }
  const address = (field: 'coin_contract' | 'tx_to') => {
    const observed = intent[field];
    if (observed !== null && observed.toLowerCase() !== row[field]?.toLowerCase()) {
      differences[field] = { booked: row[field], observed };
    }
  };
  address('coin_contract');
  address('tx_to');
  if (Object.keys(differences).length === 0) return [];
  return [
    {
      kind: 'confirmed_facts_changed',
      severity: 'critical',
      ref: { type: 'checkout_intent', id },
      details: { differences },
    },
  ];
}

/** The observation as written under the lock: what the ledger rules book from. */
interface WrittenSnapshot {
  id: string;
  /** The intent row's store: what every rule books to. */
  storeId: string;
  intent: CheckoutIntent;
  facts: CheckoutIntent;
  row: WrittenRow | undefined;
  /** The intent's reversed rule-1 entries so far: the revision a confirmation is booked as. */
  revision: number;
}

interface LedgerOutcome {
  posted: PostedEntry | null;
  reversed: PostedEntry | null;
  findings: FindingDraft[];
  settledBy: string | null;
}

/** Rule 1 for a CONFIRMED intent, rule 4 for a failure; nothing for a status on the way. */
async function applyLedgerRules(
  tx: DbExecutor,
  deps: SnapshotDeps,
  obs: IntentObservation,
  change: StatusChange,
  written: WrittenSnapshot,
): Promise<LedgerOutcome> {
  if (change.status === CheckoutStatus.CONFIRMED && change.confirmedAt) {
    const booked = await bookConfirmedIntent(tx, deps, written, change.confirmedAt, change.settledBy);
    return { ...booked, reversed: null };
  }
  if (isFailureStatus(change.status)) {
    const failed = await reverseFailedConfirmation(tx, deps, obs, written, change.status);
    return { ...failed, posted: null, settledBy: change.settledBy };
  }
  return { posted: null, reversed: null, findings: [], settledBy: change.settledBy };
}

/** Rule 1, then rule 2; settledBy comes back null when the intent is to be polled on. */
async function bookConfirmedIntent(
  tx: DbExecutor,
  deps: SnapshotDeps,
  { id, storeId, intent, facts, row, revision }: WrittenSnapshot,
  confirmedAt: Date,
  settledBy: string | null,
): Promise<Omit<LedgerOutcome, 'reversed'>> {
  // The chain and token as the row holds them: once rule 1 booked, those it booked in.
  const token = row
    ? {
        chainId: row.chain_id === null ? null : Number(row.chain_id),
        contract: row.coin_contract,
        symbol: row.coin_symbol,
      }
    : { chainId: intent.chain_id, contract: intent.coin_contract, symbol: intent.coin_symbol };
  // Confirmed again after a failure that moved the proven payment to suspense: that proof is the
  // chain's net for a rule 1 that waits for one (P - F != N); no new proof of it will come.
  const provenNet = revision > 0 ? ((await provenInSuspense(tx, id)) ?? undefined) : undefined;
  const booked = await bookConfirmation(
    tx,
    deps,
    {
      intentId: id,
      storeId,
      chainId: token.chainId,
      coinContract: token.contract,
      coinSymbol: token.symbol,
      amountCoins: intent.amount_coins,
      actualPaidAmount: facts.actual_paid_amount,
      serviceFeeAmount: facts.service_fee_amount,
      netIncomeAmount: facts.net_income_amount,
      amountCents: intent.amount_cents,
      currency: intent.currency,
      currencyRate: intent.currency_rate,
      txHash: intent.tx_hash,
      txHash2: intent.tx_hash_2,
      confirmedAt,
      revision,
      openBookingFindings: row?.open_booking_findings ?? [],
    },
    provenNet,
    deps.deferred,
  );
  // Confirmed again after a failure that moved the proven payment to suspense: back to the sale.
  if (revision > 0) await returnProvenFromSuspense(tx, id, revision, confirmedAt);
  // Rare (no amounts, unknown token, an amount the token cannot hold; or a routed payment whose
  // sweep, tx_hash_2, the service has not reported yet): keep polling it.
  const pollOn = !booked.settled || (row !== undefined && awaitsSweepHash(row));
  let stillSettledBy = settledBy;
  if (pollOn && stillSettledBy !== null) {
    await tx.execute(sql`update checkout_intents set settled_by = null where id = ${id}`);
    stillSettledBy = null;
  }
  // The chain may have proven the payment before the service's confirmation reached us. Rule 2
  // reads rule 1's entry, so a deferred one is written first; without a final log it reads none.
  if (deps.deferred && row?.has_final_logs !== false) await deps.deferred.flush(tx);
  const proof = await proveIntentPayment(tx, deps, id, row);
  return {
    posted: booked.posted,
    findings: [...booked.findings, ...proof.findings],
    settledBy: stillSettledBy,
  };
}

/**
 * Rule 4: a failure reverses the intent's live rule-1 entry, if rule 4 says so; a payment rule 2
 * had proven goes from in_transit to suspense in the same transaction.
 */
async function reverseFailedConfirmation(
  tx: DbExecutor,
  deps: SnapshotDeps,
  obs: IntentObservation,
  { id, storeId, revision }: WrittenSnapshot,
  status: CheckoutStatus,
): Promise<Pick<LedgerOutcome, 'reversed' | 'findings'>> {
  // The live rule-1 entry, if any: the earlier revisions are reversed already.
  const key = checkoutConfirmedKey(id, revision);
  const existing = await tx.execute<{ id: string }>(
    sql`select id::text from ledger_entries where idempotency_key = ${key}`,
  );
  const entryId = existing.rows[0]?.id;
  const decision = checkoutTerminalFailure({
    storeId,
    intentId: id,
    status: status as CheckoutFailureStatus,
    confirmedEntryPosted: entryId !== undefined,
    revision,
    // Read only when there is a confirmation to reverse (rare): the proven money in the wallet.
    ...(entryId !== undefined
      ? { proven: { occurredAt: obs.observedAt, amounts: await provenInWallet(tx, id) } }
      : {}),
  });
  let reversed: PostedEntry | null = null;
  if (decision.reverse && entryId) {
    const reason = `intent ${id} ended in status ${status}`;
    reversed = await reverseEntry(tx, BigInt(entryId), reason, { occurredAt: obs.observedAt });
    await recordReversal(tx, {
      type: 'payment.booked',
      subject: id,
      ref: { type: 'checkout_intent', id },
      kind: 'checkout.confirmed',
      reversedRevision: revision,
      reversedEntryId: BigInt(entryId),
      reversal: reversed,
      occurredAt: obs.observedAt,
      reason,
      data: {
        intent_id: id,
        store_id: storeId,
        status,
        ...movedData(await entryMoved(tx, deps.chains, BigInt(entryId), 'assets:in_transit'), 'net_amount'),
      },
    });
    if (decision.entry) await postEntry(tx, decision.entry, { accounts: deps.accounts });
  }
  return { reversed, findings: decision.findings };
}

function isFailureStatus(status: number): boolean {
  return (CHECKOUT_FAILURE_STATUSES as readonly number[]).includes(status);
}

type Amounts = Pick<CheckoutIntent, 'actual_paid_amount' | 'service_fee_amount' | 'net_income_amount'>;

function lacksAmounts(intent: Amounts): boolean {
  return (
    intent.actual_paid_amount === null ||
    intent.service_fee_amount === null ||
    intent.net_income_amount === null
  );
}

/**
 * The amounts of an intent whose rule-1 entry is live (posted and not reversed by rule 4), or
 * nothing when it has none. The facts row's, as last read complete; when the row lost them (an
 * observation before this rule blanked them), the entry's metadata, which holds them as booked.
 */
async function bookedAmounts(tx: DbExecutor, id: string): Promise<Amounts | Record<string, never>> {
  const { rows } = await tx.execute<{
    row_paid: string | null;
    row_fee: string | null;
    row_net: string | null;
    entry_paid: string | null;
    entry_fee: string | null;
    entry_net: string | null;
  }>(sql`
    select c.actual_paid_amount as row_paid, c.service_fee_amount as row_fee, c.net_income_amount as row_net,
           e.metadata->>'actual_paid_amount' as entry_paid, e.metadata->>'service_fee_amount' as entry_fee,
           e.metadata->>'net_income_amount' as entry_net
    from ledger_entries e join checkout_intents c on c.id = e.ref_id
    where e.ref_type = 'checkout_intent' and e.ref_id = ${id} and e.kind = 'checkout.confirmed'
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)
    order by e.id desc limit 1`);
  const r = rows[0];
  if (!r) return {};
  const stored = {
    actual_paid_amount: r.row_paid,
    service_fee_amount: r.row_fee,
    net_income_amount: r.row_net,
  };
  if (!lacksAmounts(stored)) return stored;
  return {
    actual_paid_amount: r.entry_paid,
    service_fee_amount: r.entry_fee,
    net_income_amount: r.entry_net,
  };
}
