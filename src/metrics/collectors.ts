import type { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { balances } from '../ledger/balances.ts';
import { sealBacklog } from '../ledger/sealLedger.ts';
import { CheckoutStatus } from '../svc/models/checkoutStatus.ts';
import type { Metrics } from './metrics.ts';

/**
 * The scrape-time readers of the metrics whose truth lives in PostgreSQL (intents, ledger
 * entries and balances, findings, payouts) and Redis (queue depths). Each source runs at most
 * once per `ttlMs` however many scrapes arrive (concurrent scrapes share the read in flight), its
 * queries run under a statement timeout, and a failed read keeps the last values and counts
 * `stablebooks_metrics_scrape_errors_total` instead of failing /metrics.
 *
 * Labels are names from closed sets (status names, entry and finding kinds, account kinds, token
 * symbols, queue names): never an id or an amount. A value that is not a plain lowercase name
 * is reported as `other`.
 */
export interface CollectorDeps {
  db: Db;
  /** The daemon's queues; the per-store `polls-<store>` queues are summed as `polls`. */
  queues: Queue[];
  /** How long a read is reused (default 5 s). */
  ttlMs?: number;
  /** Statement timeout of each database read (default 5 s). */
  statementTimeoutMs?: number;
  /**
   * Whether outbound events are delivered (EVENTS_WEBHOOK_URL set): only then is the outbox's
   * backlog reported (without delivery every event stays pending until pruned, and that is no backlog).
   */
  eventsDeliveryOn?: boolean;
}

const QUEUE_STATES = [
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
  'failed',
  'completed',
] as const;

const STATUS_NAMES = new Map<number, string>(
  Object.entries(CheckoutStatus).map(([name, value]) => [value, name]),
);

export function attachCollectors(metrics: Metrics, deps: CollectorDeps): void {
  const ttlMs = deps.ttlMs ?? 5_000;
  metrics.sources.database = cached(ttlMs, () =>
    readDatabase(metrics, deps.db, deps.statementTimeoutMs ?? 5_000, deps.eventsDeliveryOn ?? false).catch(
      () => {
        metrics.scrapeErrors.inc({ source: 'database' });
      },
    ),
  );
  metrics.sources.queues = cached(ttlMs, () =>
    readQueues(metrics, deps.queues).catch(() => {
      metrics.scrapeErrors.inc({ source: 'queues' });
    }),
  );
}

/** One read at a time, reused for `ttlMs` after it finishes. */
function cached(ttlMs: number, read: () => Promise<void>): () => Promise<void> {
  let inFlight: Promise<void> | undefined;
  let doneAt = Number.NEGATIVE_INFINITY;
  return () => {
    if (inFlight) return inFlight;
    if (performance.now() - doneAt < ttlMs) return Promise.resolve();
    inFlight = read().finally(() => {
      doneAt = performance.now();
      inFlight = undefined;
    });
    return inFlight;
  };
}

/** A label value from a closed set of plain names, or `other`. */
function name(value: string | null | undefined, none = 'none'): string {
  if (value === null || value === undefined || value === '') return none;
  return /^[a-z][a-z0-9_.:-]{0,63}$/i.test(value) && !/[0-9a-f]{16}/i.test(value) ? value : 'other';
}

async function readDatabase(
  metrics: Metrics,
  db: Db,
  statementTimeoutMs: number,
  eventsDeliveryOn: boolean,
): Promise<void> {
  const read = await db.transaction(async (tx) => {
    // A read-only snapshot, bounded in time: a slow scrape must never hold up PostgreSQL.
    await tx.execute(sql.raw(`set transaction read only`));
    await tx.execute(sql.raw(`set local statement_timeout = ${Math.max(1, Math.round(statementTimeoutMs))}`));
    const intents = await tx.execute<{ status: number | null; n: string }>(sql`
      select status, count(*)::text as n from checkout_intents group by status`);
    const entries = await tx.execute<{ kind: string; n: string }>(sql`
      select kind, count(*)::text as n from ledger_entries group by kind`);
    // Open and not acknowledged: what the daemon's alert jobs notify (src/alerts), so the
    // CriticalFindings rule stops firing once a person acked the finding, as their alert does.
    const findings = await tx.execute<{ kind: string; severity: string; n: string }>(sql`
      select kind, severity, count(*)::text as n from findings
      where resolved_at is null and acked_at is null group by 1, 2`);
    const payouts = await tx.execute<{ create_outcome: string; link_status: string | null; n: string }>(sql`
      select create_outcome, link_status, count(*)::text as n from payouts group by 1, 2`);
    const recon = await tx.execute<{ store_key: string; finished: string; passed: boolean | null }>(sql`
      select distinct on (store_key) store_key, extract(epoch from finished_at)::text as finished, passed
      from recon_runs where status = 'completed' order by store_key, finished_at desc`);
    // Through the tx_id index, from the last seal's horizon: the entries of the last few seconds.
    const backlog = await sealBacklog(tx);
    // Balances from the checkpoints plus their tails (src/ledger/balances.ts), not a full scan.
    const accounts = await balances(tx);
    // The outbox's undelivered rows, through its partial index of them.
    const events = eventsDeliveryOn
      ? await tx.execute<{ n: string }>(sql`
          select count(*)::text as n from event_outbox where delivered_at is null and given_up_at is null`)
      : undefined;
    return {
      eventsPending: events?.rows[0]?.n,
      recon: recon.rows,
      intents: intents.rows,
      entries: entries.rows,
      findings: findings.rows,
      payouts: payouts.rows,
      accounts,
      backlog,
    };
  });

  metrics.intents.reset();
  for (const r of read.intents) {
    const status = r.status === null ? 'UNKNOWN' : (STATUS_NAMES.get(r.status) ?? 'other');
    metrics.intents.inc({ status }, Number(r.n));
  }
  metrics.ledgerEntries.reset();
  for (const r of read.entries) metrics.ledgerEntries.inc({ kind: name(r.kind) }, Number(r.n));
  metrics.findingsOpen.reset();
  for (const r of read.findings)
    metrics.findingsOpen.inc({ kind: name(r.kind), severity: name(r.severity) }, Number(r.n));
  metrics.payouts.reset();
  for (const r of read.payouts)
    metrics.payouts.inc(
      { create_outcome: name(r.create_outcome), link_status: name(r.link_status) },
      Number(r.n),
    );

  if (read.eventsPending !== undefined) metrics.eventsOutboxPending.set(Number(read.eventsPending));

  metrics.reconLastSuccess.reset();
  metrics.reconLastPassed.reset();
  for (const r of read.recon) {
    // Store ids come from STORES_FILE (a closed set the operator chose), `*` is every store.
    const scope = r.store_key === '*' ? 'all' : name(r.store_key);
    metrics.reconLastSuccess.set({ scope }, Number(r.finished));
    metrics.reconLastPassed.set({ scope }, r.passed ? 1 : 0);
  }

  const net = new Map<string, bigint>();
  const byKind = new Map<
    string,
    { labels: Record<'account' | 'chain_id' | 'token', string>; units: number }
  >();
  for (const a of read.accounts) {
    net.set(a.asset, (net.get(a.asset) ?? 0n) + a.balance);
    const account = name(a.code.split(':').slice(0, 2).join(':'));
    const labels = { account, chain_id: String(a.chainId), token: name(a.symbol) };
    const key = `${account}|${labels.chain_id}|${labels.token}`;
    const line = byKind.get(key) ?? { labels, units: 0 };
    line.units += Number(a.balance) / 10 ** a.decimals;
    byKind.set(key, line);
  }
  metrics.ledgerUnsealedEntries.set(read.backlog.unsealed);
  metrics.ledgerSealLag.set(read.backlog.lagSeconds);
  metrics.ledgerImbalance.set([...net.values()].filter((v) => v !== 0n).length);
  metrics.ledgerBalance.reset();
  for (const line of byKind.values()) metrics.ledgerBalance.set(line.labels, line.units);
}

async function readQueues(metrics: Metrics, queues: Queue[]): Promise<void> {
  const counts = await Promise.all(
    queues.map(async (q) => ({
      queue: q.name.startsWith('polls-') ? 'polls' : name(q.name),
      counts: await q.getJobCounts(...QUEUE_STATES),
    })),
  );
  metrics.queueJobs.reset();
  for (const { queue, counts: c } of counts)
    for (const state of QUEUE_STATES) metrics.queueJobs.inc({ queue, state }, c[state] ?? 0);
}
