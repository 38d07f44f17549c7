import { sql } from 'drizzle-orm';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { storableFields, toJsonb } from '../db/storableJson.ts';
import type { FindingDraft } from '../findings/finding.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import { type PostedEntry, reverseEntry } from '../ledger/postEntry.ts';
import {
  CHECKOUT_FAILURE_STATUSES,
  type CheckoutFailureStatus,
  checkoutConfirmedKey,
  checkoutTerminalFailure,
} from '../ledger/rules/checkoutRules.ts';
import { sameDecimalAmount } from '../money/decimalAmount.ts';
import type { CheckoutIntent } from '../svc/models/checkoutIntent.ts';
import { CheckoutStatus, isTerminalCheckoutStatus } from '../svc/models/checkoutStatus.ts';
import type { CheckoutWebhookPayload } from '../svc/models/checkoutWebhook.ts';
import { BOOKING_FINDINGS, bookConfirmation } from './bookConfirmation.ts';
import {
  awaitsSweepHash,
  type IntentRow,
  intentRowColumns,
  proveIntentPayment,
} from './proveIntentPayment.ts';

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

export async function applyIntentSnapshot(
  tx: DbExecutor,
  deps: { chains: ChainRegistry; accounts?: AccountCache },
  obs: IntentObservation,
): Promise<ApplyResult> {
  // Free text from the service (user_name, order_description...) may hold what PostgreSQL refuses.
  const intent = storableFields(obs.intent);
  const id = intent.all_svc_checkout_intent_id;
  // Make sure the row exists and lock it, in one round trip: ON CONFLICT DO UPDATE locks the row
  // (waiting for a concurrent observer, like FOR UPDATE) and returns it as last committed, so
  // concurrent observers of one intent go one at a time and the second sees what the first wrote
  // (confirmed_at above all). The update sets nothing that changes. Only the row is read here:
  // anything else this statement read would come from its snapshot, taken before the lock wait.
  const locked = await executePrepared<{
    status: number | null;
    status_changed_at: Date | null;
    confirmed_at: Date | null;
    settled_by: string | null;
  }>(
    tx,
    sql`
    insert into checkout_intents as c (id, store_id, tracked_via, tracked_at)
    values (${id}, ${obs.storeId}, ${obs.source}, ${obs.observedAt.toISOString()}::timestamptz)
    on conflict (id) do update set id = c.id
    returning c.status, c.status_changed_at, c.confirmed_at, c.settled_by`,
  );
  const before = locked.rows[0];
  const previousStatus = before?.status ?? null;
  const wasTerminal = previousStatus !== null && isTerminalCheckoutStatus(previousStatus as CheckoutStatus);
  const wasFailure = previousStatus !== null && isFailureStatus(previousStatus);
  if (
    wasTerminal &&
    (!isTerminalCheckoutStatus(intent.status) ||
      (intent.status !== previousStatus &&
        before?.status_changed_at != null &&
        obs.observedAt < new Date(before.status_changed_at)))
  ) {
    // A stale observation (a poll answered before the terminal status was recorded): a terminal
    // status never changes back, nor to another terminal status on an older read, so the facts
    // stay as they are.
    const status = previousStatus;
    const settled = before?.settled_by != null;
    return { previousStatus, status, terminal: true, settled, posted: null, reversed: null, findings: [] };
  }
  const status = intent.status;
  const terminal = isTerminalCheckoutStatus(status);
  const confirmedAt =
    status === CheckoutStatus.CONFIRMED && wasFailure
      ? obs.observedAt // confirmed again: the new entry is dated when we learnt it, not backdated
      : before?.confirmed_at != null
        ? new Date(before.confirmed_at)
        : status === CheckoutStatus.CONFIRMED
          ? obs.observedAt
          : null;
  let settledBy = before?.settled_by ?? (terminal ? obs.source : null);
  const changed = previousStatus !== status;
  // A transaction once reported stays a fact: a later read without its hashes (a bare API answer)
  // does not blank them, since rule 2, the payment verifier and matching read them from the row;
  // a different hash replaces them.
  // What the columns take: the read, except that a CONFIRMED read without its amounts (a duplicate
  // webhook or a replay whose API read lacks them) never blanks the amounts rule 1 booked. With a
  // live rule-1 entry the stored amounts stay the intent's facts, so rule 1 below is a replay, the
  // intent stays settled and no `confirmed_without_amounts` is raised. raw_payload keeps the read
  // as sent. Read only on this rare path, after the lock (READ COMMITTED: a reversal committed
  // by an observer we waited for is seen).
  const facts =
    status === CheckoutStatus.CONFIRMED && lacksAmounts(intent)
      ? { ...intent, ...(await bookedAmounts(tx, id)) }
      : intent;

  // The facts and, when the status changed, its history row in one round trip; the row comes
  // back for rule 2 below, with the intent's reversed rule-1 entries so far (a confirmation after
  // a failure is booked as the next revision). Counted here, not in the lock statement: this
  // statement's snapshot is taken after the lock was granted (READ COMMITTED), so it sees the
  // reversal of an observer we waited for; the lock statement's would not, and a CONFIRMED
  // applied just after a reversal would re-post under the reversed entry's key (no income).
  const written = await executePrepared<
    IntentRow & {
      confirmed_revision: number;
      open_booking_findings: string[];
      open_webhook_mismatch: WebhookMismatchDetails | null;
    }
  >(
    tx,
    sql`
    with u as (
      update checkout_intents set
        currency = ${intent.currency}, currency_symbol = ${intent.currency_symbol},
        amount_cents = ${intent.amount_cents?.toString() ?? null}::bigint, chain_id = ${intent.chain_id},
        amount_coins = ${intent.amount_coins}, coin_symbol = ${intent.coin_symbol}, coin_contract = ${intent.coin_contract},
        currency_rate = ${intent.currency_rate}, status = ${status}, order_id = ${intent.order_id},
        order_description = ${intent.order_description}, user_id = ${intent.user_id}, user_name = ${intent.user_name},
        error_message = ${intent.error_message},
        tx_hash = coalesce(${intent.tx_hash}, tx_hash), tx_hash_2 = coalesce(${intent.tx_hash_2}, tx_hash_2),
        tx_from = coalesce(${intent.tx_from}, tx_from), tx_to = ${intent.tx_to}, actual_paid_amount = ${facts.actual_paid_amount},
        service_fee_amount = ${facts.service_fee_amount}, net_income_amount = ${facts.net_income_amount},
        payment_method_type = ${intent.payment_method_type}, accepted_stable_coins = ${intent.accepted_stable_coins},
        raw_payload = ${toJsonb(intent)}::jsonb,
        status_changed_at = case when ${changed} then ${obs.observedAt.toISOString()}::timestamptz else status_changed_at end,
        confirmed_at = ${confirmedAt?.toISOString() ?? null}::timestamptz,
        settled_by = ${settledBy}, updated_at = now()
      where id = ${id}
      returning ${intentRowColumns}
    ), h as (
      insert into checkout_intent_status_history (intent_id, from_status, to_status, source, observed_at)
      select ${id}, ${previousStatus}::int, ${status}::int, ${obs.source}, ${obs.observedAt.toISOString()}::timestamptz
      where ${changed}
    )
    select u.*,
      (select count(*)::int from ledger_entries e
       where e.ref_type = 'checkout_intent' and e.ref_id = ${id} and e.kind = 'checkout.confirmed.reversal') as confirmed_revision,
      (select coalesce(array_agg(f.kind), '{}') from findings f
       where f.ref_type = 'checkout_intent' and f.ref_id = ${id} and f.resolved_at is null
         and f.kind = any(${sql.param([...BOOKING_FINDINGS])}::text[])) as open_booking_findings,
      (select f.details from findings f
       where f.ref_type = 'checkout_intent' and f.ref_id = ${id} and f.resolved_at is null
         and f.kind = ${WEBHOOK_MISMATCH}) as open_webhook_mismatch
    from u`,
  );
  const row = written.rows[0];
  const revision = row?.confirmed_revision ?? 0;

  // Against the facts we hold: an API read that only lacks the amounts does not disagree with them.
  const findings: FindingDraft[] = obs.webhook ? compareWebhook(obs.webhook, facts) : [];
  // A webhook that disagreed with a read that was only behind (ON_CHAIN, or no amounts yet): once
  // a later read says what the webhook said, there is nothing left to look at.
  const mismatch = row?.open_webhook_mismatch;
  if (mismatch && !findings.some((f) => f.kind === WEBHOOK_MISMATCH) && webhookNowAgrees(mismatch, facts)) {
    await resolveFinding(tx, WEBHOOK_MISMATCH, { type: 'checkout_intent', id });
  }
  if (wasFailure && status !== previousStatus && terminal) {
    // The service contradicts a terminal failure (CONFIRMED -> failure is rule 4's own finding).
    findings.push({
      kind: 'terminal_status_changed',
      severity: 'critical',
      ref: { type: 'checkout_intent', id },
      details: { from: previousStatus, to: status, source: obs.source },
    });
  }
  let posted: PostedEntry | null = null;
  let reversed: PostedEntry | null = null;

  if (status === CheckoutStatus.CONFIRMED && confirmedAt) {
    const booked = await bookConfirmation(tx, deps, {
      intentId: id,
      storeId: obs.storeId,
      chainId: intent.chain_id,
      coinContract: intent.coin_contract,
      coinSymbol: intent.coin_symbol,
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
    });
    findings.push(...booked.findings);
    posted = booked.posted;
    // Rare (no amounts, unknown token, an amount the token cannot hold; or a routed payment whose
    // sweep, tx_hash_2, the service has not reported yet): keep polling it.
    const pollOn = !booked.settled || (row !== undefined && awaitsSweepHash(row));
    if (pollOn && settledBy !== null) {
      await tx.execute(sql`update checkout_intents set settled_by = null where id = ${id}`);
      settledBy = null;
    }
    // The chain may have proven the payment before the service's confirmation reached us.
    const proof = await proveIntentPayment(tx, deps, id, row);
    findings.push(...proof.findings);
  } else if (isFailureStatus(status)) {
    // The live rule-1 entry, if any: the earlier revisions are reversed already.
    const key = checkoutConfirmedKey(id, revision);
    const existing = await tx.execute<{ id: string }>(
      sql`select id::text from ledger_entries where idempotency_key = ${key}`,
    );
    const entryId = existing.rows[0]?.id;
    const decision = checkoutTerminalFailure({
      storeId: obs.storeId,
      intentId: id,
      status: status as CheckoutFailureStatus,
      confirmedEntryPosted: entryId !== undefined,
      revision,
    });
    findings.push(...decision.findings);
    if (decision.reverse && entryId) {
      reversed = await reverseEntry(tx, BigInt(entryId), `intent ${id} ended in status ${status}`, {
        occurredAt: obs.observedAt,
      });
    }
  }
  for (const finding of findings) await recordFinding(tx, finding, obs.storeId);
  return { previousStatus, status, terminal, settled: settledBy !== null, posted, reversed, findings };
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

/**
 * The fields a webhook and an API read of its intent are compared on: the webhook's value, the
 * read's, and whether the read says what the webhook said (amounts as numbers, hex addresses and
 * hashes in any case, and of the status only paid or not: any status but 20 is not paid). A
 * webhook value of null says nothing for actual_paid_amount and status (not recorded, or from
 * before the field existed). `agrees` also takes a webhook value back from a finding's JSON.
 */
const WEBHOOK_FIELDS: Record<
  string,
  {
    webhook: (w: CheckoutWebhookPayload) => unknown;
    api: (i: CheckoutIntent) => unknown;
    agrees: (webhook: unknown, i: CheckoutIntent) => boolean;
    optional?: boolean;
  }
> = {
  amount_coins: {
    webhook: (w) => w.amount_coins,
    api: (i) => i.amount_coins,
    agrees: (v, i) => sameDecimalAmount(textOf(v), i.amount_coins),
  },
  actual_paid_amount: {
    webhook: (w) => w.actual_paid_amount,
    api: (i) => i.actual_paid_amount,
    agrees: (v, i) => sameDecimalAmount(textOf(v), i.actual_paid_amount),
    optional: true,
  },
  chain_id: { webhook: (w) => w.chain_id, api: (i) => i.chain_id, agrees: (v, i) => v === i.chain_id },
  coin_contract: {
    webhook: (w) => w.coin_contract_address,
    api: (i) => i.coin_contract,
    agrees: (v, i) => sameText(v, i.coin_contract),
  },
  tx_hash: { webhook: (w) => w.tx_hash, api: (i) => i.tx_hash, agrees: (v, i) => sameText(v, i.tx_hash) },
  status: {
    webhook: (w) => w.status,
    api: (i) => i.status,
    agrees: (v, i) => (v === CheckoutStatus.CONFIRMED) === (i.status === CheckoutStatus.CONFIRMED),
    optional: true,
  },
};

const textOf = (v: unknown) => (v === null || v === undefined ? null : String(v));
const sameText = (a: unknown, b: unknown) => String(a ?? '').toLowerCase() === String(b ?? '').toLowerCase();

/** A webhook that disagrees with the API is a finding for a person, never a crash. */
function compareWebhook(webhook: CheckoutWebhookPayload, intent: CheckoutIntent): FindingDraft[] {
  const differences: Record<string, { webhook: unknown; api: unknown }> = {};
  for (const [field, f] of Object.entries(WEBHOOK_FIELDS)) {
    const value = f.webhook(webhook);
    if (f.optional && value === null) continue;
    if (!f.agrees(value, intent)) differences[field] = { webhook: value, api: f.api(intent) };
  }
  if (Object.keys(differences).length === 0) return [];
  return [
    {
      kind: WEBHOOK_MISMATCH,
      severity: 'warning',
      ref: { type: 'checkout_intent', id: intent.all_svc_checkout_intent_id },
      details: { webhook_id: webhook.webhook_id, differences },
    },
  ];
}

const WEBHOOK_MISMATCH = 'webhook_api_mismatch';

/** What compareWebhook records: per field, the webhook's value and the API's. */
interface WebhookMismatchDetails {
  differences?: Record<string, { webhook: unknown; api: unknown }>;
}

/** Whether every field a webhook_api_mismatch recorded now reads as the webhook said. */
function webhookNowAgrees(details: WebhookMismatchDetails, intent: CheckoutIntent): boolean {
  return Object.entries(details.differences ?? {}).every(
    ([field, { webhook }]) => WEBHOOK_FIELDS[field]?.agrees(webhook, intent) ?? false,
  );
}
