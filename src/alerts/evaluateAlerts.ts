import { sql } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { Db, DbExecutor } from '../db/database.ts';
import type { Logger } from '../logging/logger.ts';
import { redactClaimLinks } from '../logging/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import {
  type AlertCondition,
  type AlertSeverity,
  balanceProofConditions,
  type CursorPassRow,
  chainLagConditions,
  chainStalledConditions,
  type FindingRow,
  findingConditions,
  type ProofRow,
} from './conditions.ts';
import { type AlertMessage, type Notifier, type RetryOptions, sendWithRetry } from './notifiers.ts';
import type { AlertRoutes } from './routes.ts';

/**
 * One alerts run (the `alerts.evaluate` job, every minute), in two steps:
 *
 * 1. evaluate: under a transaction-scoped advisory lock (runs in several processes take turns,
 *    so no run acts on a stale reading after a newer one), read the conditions that hold now and
 *    move `alert_states`: a new condition fires (message `firing` owed), a firing one whose
 *    severity rises owes a new `firing` (to the notifiers of its new severity), a firing one whose
 *    last message is older than the reminder interval owes a `reminder`, a firing one that no
 *    longer holds resolves (`resolved` owed; nothing at all when its `firing` never went out).
 * 2. deliver: each owed message under its row lock (FOR UPDATE SKIP LOCKED: one process sends it),
 *    to the notifiers its severity routes to, each with bounded retries. A notifier that stays
 *    down leaves the message owed (and `last_error` set) for the next run; it never fails the job.
 *
 * Exactly once per event across concurrent runs; a crash between a send and its commit sends it
 * again on the next run, with the same message id so the receiver can drop the repeat.
 */
export interface AlertDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  metrics: Pick<Metrics, 'alertNotifications'>;
  notifiers: Notifier[];
  routes: AlertRoutes | undefined;
  /** A reminder while a condition lasts, this long after the last message. */
  remindMs: number;
  chainLagBlocks: number;
  /** Known secret values, scrubbed from every message (a second layer; conditions carry none). */
  secrets: string[];
  retry: RetryOptions;
}

export interface AlertRunSummary {
  conditions: number;
  delivered: number;
  failed: number;
}

const LOCK_KEY = 'stablebooks.alerts.evaluate';
/** Resolved alerts with nothing owed are forgotten after this long. */
const KEEP_RESOLVED_MS = 30 * 24 * 3_600_000;
/**
 * A chain whose indexer has recorded no pass for this long is stalled. Passes run every 4 s
 * (`chain.index`, times POLL_INTERVAL_SCALE) and each one is bounded to about 10 s of reading,
 * so 10 minutes is over a hundred missed passes at the default scale, yet short next to what a
 * stall costs (no payment on the chain proven). The same 10 minutes as the ChainLag rule's `for`.
 * Not scaled, like the lag threshold (a scale above about 50 would leave under three passes of
 * margin); a constant, as no setting says how long is too long.
 */
const CHAIN_STALLED_MS = 10 * 60_000;

export async function evaluateAlerts(deps: AlertDeps): Promise<AlertRunSummary> {
  const conditions = await deps.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${LOCK_KEY}))`);
    const current = await readConditions(tx, deps.chainLagBlocks);
    await applyConditions(tx, current, deps.clock.now(), deps.remindMs);
    return current;
  });
  const { delivered, failed } = await deliverPending(deps);
  return { conditions: conditions.length, delivered, failed };
}

/**
 * The conditions that hold now, from findings, the latest balance proofs and the chain cursors
 * (lag behind the head, and time since the last pass).
 * The latest proof of each (chain, token, wallet, role): a wallet in two roles has two; a series
 * the configuration no longer proves was closed by the next proof pass (a `retired` row,
 * recon/balanceProofs.ts) and is not followed any more.
 */
export async function readConditions(tx: DbExecutor, chainLagBlocks: number): Promise<AlertCondition[]> {
  const findings = await tx.execute<{
    kind: string;
    severity: AlertSeverity;
    store_id: string | null;
    ref_type: string;
    ref_id: string;
    details: unknown;
    first_seen_at: string | Date;
  }>(sql`
    select kind, severity, store_id, ref_type, ref_id, details, first_seen_at from findings
    where resolved_at is null and acked_at is null and severity in ('warning', 'critical')`);
  const proofs = await tx.execute<{
    chain_id: string;
    token: string;
    symbol: string;
    wallet: string;
    role: string;
    ok: boolean | null;
    error: string | null;
    ledger_balance: string;
    chain_balance: string | null;
    proved_at: string | Date;
    note: string | null;
  }>(sql`
    select chain_id, token, symbol, wallet, role, ok, error, ledger_balance, chain_balance, proved_at, note
    from (
      select distinct on (chain_id, token, wallet, role)
        chain_id, token, symbol, wallet, role, ok, error, ledger_balance, chain_balance, proved_at,
        details->>'note' as note, coalesce((details->>'retired')::boolean, false) as retired
      from balance_proofs order by chain_id, token, wallet, role, proved_at desc, id desc
    ) latest
    where not retired`);
  const cursors = await tx.execute<{
    chain_id: string;
    block_number: string;
    head_block: string | null;
    updated_at: string | Date;
    db_now: string | Date;
  }>(sql`select chain_id, block_number, head_block, updated_at, now() as db_now from chain_cursors`);
  const cursorRows = cursors.rows.map(
    (c): CursorPassRow => ({
      chainId: Number(c.chain_id),
      blockNumber: BigInt(c.block_number),
      headBlock: c.head_block === null ? null : BigInt(c.head_block),
      updatedAt: new Date(c.updated_at),
    }),
  );
  // Where the configuration still proves a wallet (a chain it dropped has only retired series).
  const followed = new Set(proofs.rows.map((p) => Number(p.chain_id)));
  return [
    ...findingConditions(
      findings.rows.map(
        (f): FindingRow => ({
          kind: f.kind,
          severity: f.severity,
          storeId: f.store_id,
          refType: f.ref_type,
          refId: f.ref_id,
          details: f.details,
          firstSeenAt: new Date(f.first_seen_at),
          resolvedAt: null,
          ackedAt: null,
        }),
      ),
    ),
    ...balanceProofConditions(
      proofs.rows.map(
        (p): ProofRow => ({
          chainId: Number(p.chain_id),
          token: p.token,
          symbol: p.symbol,
          wallet: p.wallet,
          role: p.role,
          ok: p.ok,
          error: p.error,
          ledgerBalance: String(p.ledger_balance),
          chainBalance: p.chain_balance === null ? null : String(p.chain_balance),
          provedAt: new Date(p.proved_at),
          note: p.note,
        }),
      ),
    ),
    ...chainLagConditions(cursorRows, chainLagBlocks),
    // Against the database's clock, which wrote updated_at: the daemon's clock may follow the
    // sandbox's, days ahead.
    ...chainStalledConditions(cursorRows, followed, new Date(cursors.rows[0]?.db_now ?? 0), CHAIN_STALLED_MS),
  ];
}

/** In applyConditions' upsert: the condition's severity is above the stored one (info < warning < critical). */
const RAISED = sql`array_position('{info,warning,critical}'::text[], excluded.severity)
  > array_position('{info,warning,critical}'::text[], a.severity)`;

/** Moves alert_states to the conditions that hold at `now` (set-based: three statements). */
export async function applyConditions(
  tx: DbExecutor,
  conditions: AlertCondition[],
  now: Date,
  remindMs: number,
): Promise<void> {
  const nowIso = now.toISOString();
  // A resolved alert whose `resolved` message went to nobody yet simply continues (a flap inside
  // one delivery gap says nothing); any other resolved alert starts a new episode. A rise in
  // severity (warning to critical) owes a new `firing` at once, in the same episode, to every
  // notifier the new severity routes to (pending_sent_to starts again); a fall, or a new text
  // alone, only updates the row, and the next reminder carries it.
  await tx.execute(sql`
    insert into alert_states as a (key, severity, status, title, text, labels, pending, first_fired_at)
    select c.key, c.severity, 'firing', c.title, c.text, coalesce(c.labels, '{}'::jsonb), 'firing', ${nowIso}::timestamptz
    from jsonb_to_recordset(${JSON.stringify(conditions)}::jsonb)
      as c(key text, severity text, title text, text text, labels jsonb)
    on conflict (key) do update set
      severity = excluded.severity, title = excluded.title, text = excluded.text, labels = excluded.labels,
      status = 'firing',
      resolved_at = null,
      pending = case
        when ${RAISED} then 'firing'
        when a.status = 'firing' then a.pending
        when a.pending = 'resolved' and cardinality(a.pending_sent_to) = 0 then null
        else 'firing' end,
      pending_sent_to = case when a.status = 'firing' and not ${RAISED} then a.pending_sent_to else '{}'::text[] end,
      first_fired_at = case
        when a.status = 'firing' or (a.pending = 'resolved' and cardinality(a.pending_sent_to) = 0)
          then a.first_fired_at
        else excluded.first_fired_at end,
      notify_count = case
        when a.status = 'firing' or (a.pending = 'resolved' and cardinality(a.pending_sent_to) = 0)
          then a.notify_count
        else 0 end,
      last_notified_at = case
        when a.status = 'firing' or (a.pending = 'resolved' and cardinality(a.pending_sent_to) = 0)
          then a.last_notified_at
        else null end
    where a.status = 'resolved' or a.severity is distinct from excluded.severity
       or a.title is distinct from excluded.title or a.text is distinct from excluded.text
       or a.labels is distinct from excluded.labels`);
  // A `firing` that reached no notifier needs no `resolved`.
  await tx.execute(sql`
    update alert_states set status = 'resolved', resolved_at = ${nowIso}::timestamptz,
      pending = case when pending = 'firing' and cardinality(pending_sent_to) = 0 then null else 'resolved' end,
      pending_sent_to = '{}'::text[]
    where status = 'firing'
      and key not in (select jsonb_array_elements_text(${JSON.stringify(conditions.map((c) => c.key))}::jsonb))`);
  await tx.execute(sql`
    update alert_states set pending = 'reminder', pending_sent_to = '{}'::text[]
    where status = 'firing' and pending is null
      and last_notified_at <= ${nowIso}::timestamptz - make_interval(secs => ${remindMs / 1000})`);
  await tx.execute(sql`
    delete from alert_states where status = 'resolved' and pending is null
      and resolved_at < ${nowIso}::timestamptz - make_interval(secs => ${KEEP_RESOLVED_MS / 1000})`);
}

type StateRow = {
  key: string;
  severity: AlertSeverity;
  title: string;
  text: string;
  labels: Record<string, string>;
  pending: AlertMessage['event'];
  pending_sent_to: string[];
  first_fired_at: string | Date;
  resolved_at: string | Date | null;
  notify_count: number;
};

/** Sends every owed message, one row at a time under its row lock. */
async function deliverPending(deps: AlertDeps): Promise<{ delivered: number; failed: number }> {
  let delivered = 0;
  let failed = 0;
  let after = '';
  for (;;) {
    const outcome = await deps.db.transaction(async (tx) => {
      const { rows } = await tx.execute<StateRow>(sql`
        select key, severity, title, text, labels, pending, pending_sent_to, first_fired_at, resolved_at, notify_count
        from alert_states where pending is not null and key > ${after}
        order by key limit 1 for update skip locked`);
      const row = rows[0];
      if (!row) return undefined;
      after = row.key;
      const now = deps.clock.now();
      const message = scrubMessage(toMessage(row, now), deps.secrets);
      const sentTo = [...row.pending_sent_to];
      const errors: string[] = [];
      for (const notifier of routedNotifiers(deps, row.severity)) {
        if (sentTo.includes(notifier.name)) continue;
        const err = await sendWithRetry(notifier, message, deps.retry, (e, attempt) => {
          deps.metrics.alertNotifications.inc({ notifier: notifier.name, outcome: 'retried' });
          deps.logger.debug({ notifier: notifier.name, attempt, err: e.message }, 'alert notifier retry');
        });
        if (err) {
          deps.metrics.alertNotifications.inc({ notifier: notifier.name, outcome: 'failed' });
          deps.logger.warn(
            { notifier: notifier.name, alert: row.key, event: row.pending, err: err.message },
            'alert notifier is down; the message stays owed for the next run',
          );
          errors.push(`${notifier.name}: ${err.message}`);
        } else {
          deps.metrics.alertNotifications.inc({ notifier: notifier.name, outcome: 'sent' });
          sentTo.push(notifier.name);
        }
      }
      if (errors.length === 0) {
        await tx.execute(sql`
          update alert_states set pending = null, pending_sent_to = '{}'::text[],
            last_notified_at = ${now.toISOString()}::timestamptz, notify_count = notify_count + 1,
            last_error = null
          where key = ${row.key}`);
        return 'delivered' as const;
      }
      await tx.execute(sql`
        update alert_states set pending_sent_to = array(select jsonb_array_elements_text(${JSON.stringify(sentTo)}::jsonb)),
          last_error = ${errors.join('; ')}
        where key = ${row.key}`);
      return 'failed' as const;
    });
    if (outcome === undefined) break;
    if (outcome === 'delivered') delivered++;
    else failed++;
  }
  return { delivered, failed };
}

function routedNotifiers(deps: AlertDeps, severity: AlertSeverity): Notifier[] {
  const names = deps.routes?.[severity];
  return names ? deps.notifiers.filter((n) => names.includes(n.name)) : deps.notifiers;
}

function toMessage(row: StateRow, now: Date): AlertMessage {
  const firstFiredAt = new Date(row.first_fired_at).toISOString();
  return {
    // The severity is part of the event: a `firing` raised to critical before the warning one
    // reached every notifier must not look like a repeat of it to a receiver.
    id: `${row.key}|${firstFiredAt}|${row.pending}|${row.severity}|${row.notify_count}`,
    event: row.pending,
    key: row.key,
    severity: row.severity,
    title: row.title,
    text: row.pending === 'resolved' ? `Cleared. Last seen: ${row.text}` : row.text,
    labels: row.labels,
    first_fired_at: firstFiredAt,
    resolved_at: row.resolved_at === null ? null : new Date(row.resolved_at).toISOString(),
    sent_at: now.toISOString(),
  };
}

/** Removes every known secret value and anything shaped like a claim URL from every string. */
export function scrubMessage(message: AlertMessage, secrets: string[]): AlertMessage {
  const values = secrets.filter((s) => s.length >= 8).sort((a, b) => b.length - a.length);
  const scrub = (s: string) => redactClaimLinks(values.reduce((t, v) => t.split(v).join('[redacted]'), s));
  return {
    ...message,
    id: scrub(message.id),
    key: scrub(message.key),
    title: scrub(message.title),
    text: scrub(message.text),
    labels: Object.fromEntries(Object.entries(message.labels).map(([k, v]) => [k, scrub(String(v))])),
  };
}
