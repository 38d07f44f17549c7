import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { addWebhookJobs } from '../jobs/addWebhookJobs.ts';
import { chainJobs, claimLinkJobs, maintenanceJobs, pollJob, QUEUE } from '../jobs/queues.ts';
import type { Clock } from '../src/clock.ts';
import { createChainRegistry } from '../src/config/chainRegistry.ts';
import type { Config } from '../src/config/loadConfig.ts';
import type { StoreConfig } from '../src/config/stores.ts';
import type { DomainContext } from '../src/context/domainContext.ts';
import type { Database, Db } from '../src/db/database.ts';
import { createInboxWriter } from '../src/intake/inboxWriter.ts';
import { receiveWebhook } from '../src/intake/receiveWebhook.ts';
import { createAccountCache } from '../src/ledger/ensureAccounts.ts';
import { createLogger } from '../src/logging/logger.ts';
import { createMetrics } from '../src/metrics/metrics.ts';
import { formatDecimalAmount, parseDecimalAmount } from '../src/money/decimalAmount.ts';
import { trackIntent } from '../src/payments/createIntent.ts';
import { cancelPayout } from '../src/payouts/cancelPayout.ts';
import { createPayout } from '../src/payouts/createPayout.ts';
import { seededRandom } from '../src/seededRandom.ts';
import { signWebhook } from '../src/svc/signing/webhookSignature.ts';
import { judgeAllocations } from './allocationChecks.ts';
import { type ChainDouble, createChainDouble, type SimTransfer } from './chainDouble.ts';
import { worldReplacements } from './chainShapes.ts';
import { crashingDb, isConnectionLoss, SimulatedCrash } from './crashingDb.ts';
import { judgeEvents } from './eventChecks.ts';
import { type FindingFacts, judgeFindings } from './findingChecks.ts';
import { createInterleaver } from './interleaver.ts';
import { judgeNearMisses } from './nearMissChecks.ts';
import {
  beyondFinality,
  booksSale,
  expectedBalances,
  finalStatus,
  inRegistry,
  type ReorgFact,
} from './oracle.ts';
import { judgeReconReport, type ReconOutcome, reconcileWorld } from './reconChecks.ts';
import { type JobFaults, type SimEvent, type SvcCallFault, worldTransfers } from './schedule.ts';
import { createServiceDouble, type ReadFaults } from './serviceDouble.ts';
import { createSimQueues, type SimJob } from './simQueues.ts';
import { createSimWorkers, type WorkerFaults } from './simWorkers.ts';
import { judgeFinalStates } from './stateChecks.ts';
import { SIM_CHAIN_ID, type SimToken, storePar, type World } from './world.ts';

/**
 * When the world starts on the clock: this process's start, to the minute. Some times are the
 * database's own (a payout row's created_at is now()) and are compared with block times, as in
 * production where both are real time; so the world starts at the wall clock's time and only
 * moves ahead of it. Everything a seed decides is relative to this instant.
 */
const EPOCH_MS = Math.floor(Date.now() / 60_000) * 60_000;
/** How long a final transfer may wait for the fact that explains it (the daemon's, unscaled). */
const GRACE_MS = 10 * 60_000;
const FINALITY_DEPTH = 2;
/**
 * When a job that a service fault or a crash of the later faults (svc_errors, lost_answers,
 * crash_jobs) cut short runs again, unless its event says (JobFaults.retryAfter): BullMQ's backoff.
 */
const RETRY_MS = 60_000;
/** How long a cancelled or expired link may wait for its refund (REFUND_GRACE_HOURS' default). */
const REFUND_GRACE_MS = 24 * 3_600_000;
/**
 * The daemon's job schedulers in the world (src/daemon/schedulers.ts), at the catalog's interval
 * or every hour of the world's clock if that is longer: a scheduler adds its next job when it
 * falls due, and the world's clock moves minutes between events. The indexer's pass is the world's
 * `index` event (its reorg shapes are placed around those passes); the outbox prune is left out
 * (the oracle folds the whole outbox), and so are the alerts, the deliveries of outbound events
 * (no receiver here) and the daily reconciliation (run once at quiescence).
 */
const SCHEDULER_MIN_MS = 60 * 60_000;
const SCHEDULED = [
  { queue: QUEUE.chain, job: chainJobs.verifyPayments },
  { queue: QUEUE.chain, job: chainJobs.prove },
  { queue: QUEUE.claimLinks, job: claimLinkJobs.expire },
  { queue: QUEUE.claimLinks, job: claimLinkJobs.refundsOverdue },
  { queue: QUEUE.maintenance, job: maintenanceJobs.sweepInbox },
  { queue: QUEUE.maintenance, job: maintenanceJobs.sweepPolls },
  { queue: QUEUE.maintenance, job: maintenanceJobs.checkpointBalances },
  { queue: QUEUE.maintenance, job: maintenanceJobs.sealLedger },
  { queue: QUEUE.maintenance, job: maintenanceJobs.pruneNonces },
].map((s) => ({ ...s, everyMs: Math.max(SCHEDULER_MIN_MS, s.job.everyMs) }));
/** The daemon's workers in every world (issue 31): two, racing at statement boundaries. */
const WORKERS = 2;

export interface RunResult {
  problems: string[];
  /** Entries the run wrote: a measure of how much it exercised. */
  entries: number;
}

/**
 * Plays `events` of `world` to the product's own code on a database of its own (migrated, empty),
 * brings the world to quiescence (every delivery done, the chain final, the graces over), and
 * judges the books against the oracle. Never throws for what the product does: a failure of the
 * product is a problem in the result.
 */
export async function runWorld(
  database: Database,
  world: World,
  events: readonly SimEvent[],
  /** The seed the world was made from: the workers' interleaving and the product's jitter draw from it. */
  options: { seed?: string; crashScheduled?: boolean } = {},
): Promise<RunResult> {
  const seed = options.seed ?? world.stores[0]?.storeId ?? 'world';
  const crashScheduled = options.crashScheduled === true;
  let now = 0;
  const clock: Clock = { now: () => new Date(EPOCH_MS + now) };
  const logLines: string[] = [];
  const secrets = world.stores.map((s) => s.apiSecret);
  const logger = createLogger({
    level: 'info',
    secrets,
    destination: new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    }),
  });
  /** The world's chains: SIM_CHAIN_ID, and a second one with the two_chains shape. */
  const chainIds = [...new Set(world.tokens.map((t) => t.chainId))];
  const stores: StoreConfig[] = world.stores.map((s) => ({
    storeId: s.storeId,
    businessId: `biz_${s.storeId}`,
    apiKey: s.apiKey,
    apiSecret: s.apiSecret,
    signedResponse: false,
    functionalCurrency: 'USD',
    par: storePar(world, s.storeId),
    // The same addresses on every chain of the world (two_chains), as one key is on every EVM chain.
    wallets: new Map(chainIds.map((id) => [id, { merchant: s.merchant, custody: s.custody }])),
  }));
  const chains = createChainRegistry(
    chainIds.map((id) => {
      const token = (symbol: string) => world.tokens.find((t) => t.chainId === id && t.symbol === symbol);
      const [usdt, usdc] = [token('USDT'), token('USDC')];
      return {
        chain_id: id,
        name: id === SIM_CHAIN_ID ? 'sim' : `sim ${id}`,
        tokens: {
          USDT: { address: usdt?.address ?? '', decimals: usdt?.decimals ?? 6 },
          USDC: { address: usdc?.address ?? '', decimals: usdc?.decimals ?? 18 },
        },
        finality: { finalized_tag: false, depth: FINALITY_DEPTH },
        start_block: 0,
        reorg_window: 80,
      };
    }),
  );
  const config = { stores, chains } satisfies Pick<Config, 'stores' | 'chains'>;
  let readFaults: ReadFaults = { lagMs: 0, fail: false };
  /** What the service does with the running job's next calls (JobFaults.svc). */
  let callPlan: SvcCallFault[] = [];
  const nextCall = (): SvcCallFault => callPlan.shift() ?? false;
  const accounts = createAccountCache();
  /** A job's domain: the service answers its calls as the running job's faults say (`worker`'s when a worker runs it). */
  const domainOn = (db: Db, worker?: WorkerFaults): DomainContext => ({
    db,
    chains,
    stores,
    accounts,
    clock,
    logger,
    encryptionKey: Buffer.alloc(32, 7),
    client: (storeId) =>
      service.client(
        storeId,
        () => now,
        () => worker?.read ?? readFaults,
        worker ? () => worker.svc.shift() ?? false : nextCall,
      ),
  });
  /** One chain double per chain of the world; a transfer goes to its token's chain. */
  const doubles = new Map(chainIds.map((id) => [id, createChainDouble(id, FINALITY_DEPTH)]));
  const chainOf = (id: number | undefined) => doubles.get(id ?? SIM_CHAIN_ID) as ChainDouble;
  /** Each chain's client, for the whole run: the indexer keeps its learnt state per client. */
  const rpcs = new Map([...doubles].map(([id, chain]) => [id, chain.rpc()]));
  const tokenChain = new Map<string, number>(world.tokens.map((t) => [t.address, t.chainId]));
  const chainOfToken = (token: string) => chainOf(tokenChain.get(token));
  const blockTime = () => BigInt(Math.floor((EPOCH_MS + now) / 1000));
  /** The transfers the service made itself (claim links), as they were sent. */
  const serviceSent: SimTransfer[] = [];
  const service = createServiceDouble(
    world,
    (t) => {
      serviceSent.push(t);
      chainOfToken(t.token).send(t);
    },
    (chainId) => chainOf(chainId).mine(blockTime()),
  );
  /** How far each chain's indexer was shown finality (oracle.ts, ReorgFact), and the reorgs seen. */
  const shown = new Map(chainIds.map((id) => [id, { sure: -1n, maybe: -1n }]));
  const reorgFacts: ReorgFact[] = [];
  const metrics = createMetrics();
  const transfers = worldTransfers(world);
  const intents = new Map(world.intents.map((i) => [i.id, i]));
  const queues = createSimQueues(() => now);
  // The intake adds each stored webhook's job, as the daemon's (src/daemon/intake.ts).
  const inbox = createInboxWriter({
    db: database.db,
    logger,
    enqueueMany: (ids) => addWebhookJobs(queues.queue(QUEUE.webhooks), ids),
  });
  const known = new Set<string>();
  const intake = {
    clock,
    storesByKey: new Map(stores.map((st) => [st.apiKey, st])),
    inbox,
    queueLimit: 1_000_000,
    metrics,
  };
  /**
   * The service delivers a webhook through the intake, signed with its store's secret on its own
   * clock (`skewMs` off the daemon's): stored (200), or refused as stale when the clock is more
   * than the window off (401), which is the only refusal the world may see.
   */
  const deliver = async (
    storeId: string,
    webhookId: string,
    raw: Buffer,
    skewMs: number,
    endpoint: 'checkout' | 'claim-links' = 'checkout',
  ): Promise<boolean> => {
    const store = stores.find((st) => st.storeId === storeId) as StoreConfig;
    const path = `/webhooks/${endpoint}`;
    const signed = signWebhook({
      secret: store.apiSecret,
      method: 'POST',
      path,
      webhookId,
      body: raw,
      clock: { now: () => new Date(EPOCH_MS + now + skewMs) },
      nonce: `${webhookId}:${deliveries++}`,
    });
    const answer = await receiveWebhook(intake, {
      endpoint,
      method: 'POST',
      path,
      query: '',
      headers: { ...signed, 'X-API-Key': store.apiKey, 'Content-Type': 'application/json' },
      rawBody: raw,
    });
    // The window is 300 s: a delivery signed further off must never be stored.
    if (answer.status === 200 && Math.abs(skewMs) > 301_000)
      problems.push(
        `webhook ${webhookId}: the intake stored a delivery signed ${skewMs / 1000} s off its clock`,
      );
    if (answer.status === 200) return true;
    const stale = answer.status === 401 && answer.body.reason?.startsWith('stale_timestamp');
    if (!stale || Math.abs(skewMs) <= 300_000)
      problems.push(`webhook ${webhookId}: the intake answered ${answer.status} ${answer.body.reason ?? ''}`);
    return false;
  };
  /** Payouts whose link stablebooks learnt from a create answer. */
  const knownLinks = new Set<string>();
  const payouts = new Map(world.payouts.map((p) => [p.referenceId, p]));
  const tuning = { sleep: async () => {}, random: () => 0.5 };
  /** createPayout, tried `attempts` times with the same reference_id (1 unless svc_errors says). */
  const createLink = async (ref: string, faults?: JobFaults, attempts = 1) => {
    const p = payouts.get(ref);
    if (!p) return true;
    return job(faults, async (db) => {
      const result = await createPayout(
        { ...domainOn(db), ...tuning, createRetry: { maxAttempts: attempts } },
        {
          storeId: p.storeId,
          amount: formatDecimalAmount(p.A, p.token.decimals),
          coin: p.token.symbol,
          chain: p.token.chainId,
          referenceId: p.referenceId,
        },
      );
      if (result.payout.claimLinkId) knownLinks.add(ref);
    });
  };
  const problems: string[] = [];
  let deliveries = 0;

  /**
   * A job: its crash (if any) cuts it short, and the service answers its calls as its faults say;
   * anything else it throws is the job failing, retried later. True when it ran to its end.
   */
  const job = async (faults: JobFaults | undefined, run: (db: Db) => Promise<unknown>) => {
    callPlan = [...(faults?.svc ?? [])];
    const crash = faults?.crash;
    try {
      await run(
        crash === undefined
          ? database.db
          : crashingDb(database.db, crash, {
              prepared: faults?.prepared === true,
              connLoss: faults?.connLoss === true,
            }),
      );
      return true;
    } catch (err) {
      if (!(err instanceof SimulatedCrash) && !isExpected(err)) problems.push(`job threw: ${describe(err)}`);
      return false;
    } finally {
      callPlan = [];
    }
  };
  /** Whether the later faults (JobFaults) reached this event: only then is a failed job retried here. */
  const hostile = (faults: JobFaults) => faults.svc !== undefined || faults.crash !== undefined;
  /** Jobs cut short by the later faults, each run again once its time comes (RETRY_MS), by key. */
  const retries = new Map<string, { due: number; run: () => Promise<boolean> }>();
  const retryLater = (key: string, run: () => Promise<boolean>, after = RETRY_MS) =>
    retries.set(key, { due: now + after, run });
  const runRetries = async (all: boolean) => {
    for (const [key, retry] of [...retries]) {
      if (!all && retry.due > now) continue;
      retries.delete(key);
      if (!(await retry.run())) retryLater(key, retry.run);
    }
  };
  const track = async (intentId: string, faults: JobFaults) => {
    const intent = intents.get(intentId);
    if (!intent) return true;
    readFaults = { lagMs: 0, fail: false };
    const ok = await job(faults, (db) => trackIntent(domainOn(db), intent.storeId, intent.id, 'track'));
    // Known once tracked; a track the later faults cut short is known once its retry tracks it.
    if (ok || !hostile(faults)) known.add(intent.id);
    else retryLater(`track:${intentId}`, () => track(intentId, {}), faults.retryAfter);
    return ok;
  };
  const payoutId = async (ref: string) => {
    const { rows } = await database.db.execute<{ id: string; claim_link_id: string | null }>(
      sql`select id, claim_link_id from payouts where reference_id = ${ref}`,
    );
    return rows[0];
  };
  const cancel = async (ref: string, faults: JobFaults): Promise<boolean> => {
    const row = await payoutId(ref);
    if (!row) return !hostile(faults);
    let refused = false;
    const ok = await job(faults, async (db) => {
      try {
        await cancelPayout(domainOn(db), row.id);
      } catch (err) {
        // The service refused it (claimed, expired): what a person sees, and stops at.
        refused = err instanceof Error && err.name === 'PayoutStateError' && row.claim_link_id !== null;
        throw err;
      }
    });
    if (!ok && !refused && hostile(faults))
      retryLater(`cancel:${ref}`, () => cancel(ref, {}), faults.retryAfter);
    return ok || refused;
  };
  const interleaver = createInterleaver(seed, {
    lockWaiters: async () => {
      const { rows } = await database.db.execute<{ n: number }>(sql`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and backend_type = 'client backend' and wait_event_type = 'Lock'`);
      return rows[0]?.n ?? 0;
    },
  });
  const workers = createSimWorkers(
    {
      db: database.db,
      queues,
      interleaver,
      domainOn,
      chainDeps: (db) => ({
        rpcs,
        indexerFor: (chainId) => {
          const rpc = rpcs.get(chainId);
          return rpc && { db, pool: database.pool, config, rpc, metrics, logger, clock };
        },
        apply: { db, config, accounts, clock, unmatchedGraceMs: GRACE_MS },
        verify: { db, chains, stores, rpcs, clock, graceMs: GRACE_MS },
        prove: { db, config, rpcs, clock },
        metrics,
      }),
      metrics,
      logger,
      pollScale: 1,
      refundGraceMs: REFUND_GRACE_MS,
      now: () => now,
      random: seededRandom(`workers:${seed}`),
      jitter: seededRandom(`jitter:${seed}`),
      onError: (job, err) => {
        if (!isExpected(err)) problems.push(`job ${job.queue}/${job.name} threw: ${describe(err)}`);
      },
      onComplete: (job, value) => {
        // What each indexer pass that ran whole, caught up, was shown of finality (oracle.ts, ReorgFact).
        if (job.name !== chainJobs.index.name) return;
        const { chainId } = job.data as { chainId: number };
        const outcome = value as { skipped: string | null; lag: number };
        const seen = shown.get(chainId);
        const final = chainOf(chainId).head() - BigInt(FINALITY_DEPTH);
        if (seen && outcome.skipped === null && outcome.lag === 0 && final > seen.sure) seen.sure = final;
      },
    },
    WORKERS,
  );
  /** When each scheduler's next job falls due. */
  const scheduledAt = new Map(SCHEDULED.map((s) => [s.job.name, 0]));
  // The crash fault reaches the schedulers' jobs too (a stream of its own): either worker dies
  // between any two statements of any job.
  const crashRnd = seededRandom(`scheduled-crashes:${seed}`);
  const scheduledCrash = () =>
    crashScheduled && crashRnd() < 0.1 ? { crash: 1 + Math.floor(crashRnd() * 12) } : undefined;
  /** The schedulers' jobs that fell due, then every due job, on the workers, until none is due. */
  const runJobs = async () => {
    for (const s of SCHEDULED) {
      if ((scheduledAt.get(s.job.name) ?? 0) > now) continue;
      scheduledAt.set(s.job.name, now + s.everyMs);
      queues.add(s.queue, s.job.name, {}, scheduledCrash());
    }
    await workers.drain();
  };
  /** The indexer pass of each chain, as jobs: what each was shown of finality is noted when it completes. */
  /** Whether the indexer has stored a row of the transaction on the chain (in any state). */
  const indexed = async (chainId: number, txHash: string) =>
    (
      await database.db.execute(
        sql`select 1 from chain_transfers where chain_id = ${chainId} and tx_hash = ${txHash.toLowerCase()} limit 1`,
      )
    ).rows.length > 0;
  const indexChains = (faults?: { crash?: number; prepared?: true; connLoss?: true }) => {
    for (const chainId of doubles.keys()) {
      const seen = shown.get(chainId) as { sure: bigint; maybe: bigint };
      const final = chainOf(chainId).head() - BigInt(FINALITY_DEPTH);
      if (final > seen.maybe) seen.maybe = final;
      queues.add(QUEUE.chain, chainJobs.index.name, { chainId }, faults);
    }
  };
  /** The next poll of an intent now (its job brought forward, or added), with the world's read faults. */
  const pollNow = async (intentId: string, faults: SimJob['faults']) => {
    const { rows } = await database.db.execute<{ store_id: string; poll_count: number }>(
      sql`select store_id, poll_count from checkout_intents where id = ${intentId} and settled_by is null`,
    );
    const row = rows[0];
    if (!row) return;
    const id = pollJob.jobId(intentId, row.poll_count);
    const queue = queues.queue(QUEUE.polls(row.store_id));
    await queue.add(
      pollJob.name,
      { intentId, storeId: row.store_id, n: row.poll_count },
      { ...pollJob.options, jobId: id },
    );
    const held = queues.find(QUEUE.polls(row.store_id), id);
    if (held?.state !== 'held') return;
    held.due = Math.min(held.due, now);
    if (faults) held.faults = faults;
  };

  /** The service's claim-link webhooks due by now, through the intake. */
  const deliverLinkWebhooks = async () => {
    for (const w of service.takeClaimLinkWebhooks())
      await deliver(w.storeId, w.webhookId, Buffer.from(JSON.stringify(w.body)), 0, 'claim-links');
  };
  for (const event of events) {
    now = Math.max(now, event.t);
    service.advance(now);
    await runRetries(false);
    await deliverLinkWebhooks();
    switch (event.k) {
      case 'send': {
        const tx = transfers.get(event.tx);
        if (tx) chainOfToken(tx.token).send(tx);
        break;
      }
      case 'mine':
        for (const chain of doubles.values()) chain.mine(blockTime());
        break;
      case 'reorg': {
        const chainId = event.chain ?? SIM_CHAIN_ID;
        const seen = shown.get(chainId);
        // funding_resent drops a funding the books saw: one a dropped log hid from the indexer
        // would be a payout naming a hash never on chain, whose resend no rule can tie to it (a
        // gap, docs/decisions.md "Money in pieces and bundles in the simulator"); no reorg then.
        if (event.read && event.change && !(await indexed(chainId, event.change.target))) break;
        const record = doubles.get(chainId)?.reorg(event.depth, event.change);
        if (record && seen)
          reorgFacts.push({ chainId, record, finalSure: seen.sure, finalMaybe: seen.maybe });
        // The service watches its own transfers: a funding the reorg dropped is sent again.
        const dropped = event.change?.kind === 'drop' ? event.change.target : undefined;
        if (record && dropped && record.replaced.some((b) => b.transfers.some((t) => t.txHash === dropped)))
          service.transferDropped(dropped);
        break;
      }
      case 'dropLog':
        chainOf(event.chain).dropNextLog();
        break;
      case 'index':
        indexChains(event);
        await runJobs();
        break;
      case 'track':
        await track(event.intent, event);
        break;
      case 'webhook': {
        const intent = intents.get(event.intent);
        const body = intent && service.webhookAt(intent, event.sentAt, event.id);
        if (!intent || !body) break;
        readFaults = { lagMs: 0, fail: false };
        const raw = Buffer.from(JSON.stringify(body));
        const stored = await deliver(intent.storeId, event.id, raw, event.skewMs ?? 0);
        // Refused for the service's clock: it delivers again with its clock right.
        if (!stored)
          retryLater(
            `webhook:${event.id}:${deliveries}`,
            async () => {
              const ok = await deliver(intent.storeId, event.id, raw, 0);
              if (ok) known.add(intent.id);
              return ok;
            },
            180_000,
          );
        else known.add(intent.id);
        const held = queues.find(QUEUE.webhooks, `wh.${encodeURIComponent(event.id)}`);
        if (held?.state === 'held' && (event.crash !== undefined || event.svc))
          held.faults = {
            crash: event.crash,
            svc: event.svc,
            prepared: event.prepared,
            connLoss: event.connLoss,
          };
        // The workers take webhooks as they come; a batch's worth waits for them (the micro-batcher's).
        const waiting = queues.unfinished().filter((j) => j.queue === QUEUE.webhooks).length;
        if (waiting >= event.batch) await runJobs();
        break;
      }
      case 'payout': {
        const ref = event.ref;
        const ok = await createLink(ref, event, event.attempts);
        if (!ok && hostile(event) && !knownLinks.has(ref))
          retryLater(
            `payout:${ref}`,
            async () => (await createLink(ref)) && knownLinks.has(ref),
            event.retryAfter,
          );
        break;
      }
      case 'cancel':
        await cancel(event.ref, event);
        break;
      case 'claim':
        service.claim(event.ref);
        break;
      case 'expire':
        // The expiry job runs as the clock passes the link's 14 days.
        queues.add(QUEUE.claimLinks, claimLinkJobs.expire.name, {}, event);
        await runJobs();
        break;
      case 'poll':
        await pollNow(event.intent, {
          lag: event.lag,
          fail: event.fail,
          crash: event.crash,
          prepared: event.prepared,
          connLoss: event.connLoss,
        });
        await runJobs();
        break;
    }
    if (event.k !== 'webhook' && event.k !== 'index' && event.k !== 'expire' && event.k !== 'poll')
      await runJobs();
  }

  // Quiescence: every webhook processed, every tracked intent read once more, the chain final and
  // settled, every grace over. Rounds until nothing changes.
  let last = '';
  let steady = 0;
  for (let round = 0; round < 16; round++) {
    now += 6 * 3_600_000;
    service.advance(now);
    await runRetries(true);
    await deliverLinkWebhooks();
    // A real chain keeps growing: past the indexer's cursor (a deep reorg left the head below
    // it) and past finality.
    for (const [chainId, chain] of doubles) {
      const cursor = await database.db.execute<{ b: string }>(
        sql`select coalesce(max(block_number), 0)::text as b from chain_cursors where chain_id = ${chainId}`,
      );
      const target = BigInt(cursor.rows[0]?.b ?? '0') + BigInt(FINALITY_DEPTH + 2);
      do chain.mine(blockTime());
      while (chain.head() < target);
    }
    // The inbox sweeper's grace is 20 s of PostgreSQL's clock (received_at is its now()), which a
    // world, hours of its own clock in a second of wall time, never reaches: what the sweeper does
    // once it has passed, a stored webhook whose job failed for good gets a new job.
    const stored = await database.db.execute<{ webhook_id: string }>(
      sql`select webhook_id from webhook_inbox where status = 'received' order by received_at, webhook_id`,
    );
    for (const { webhook_id } of stored.rows) {
      const id = `wh.${encodeURIComponent(webhook_id)}`;
      if (queues.find(QUEUE.webhooks, id)?.state !== 'failed') continue;
      await (await queues.queue(QUEUE.webhooks).getJob(id))?.remove();
      await addWebhookJobs(queues.queue(QUEUE.webhooks), [webhook_id]);
    }
    // What a person does on funding_awaits_create_outcome: run the same create again.
    const unsettled = await database.db.execute<{ reference_id: string }>(
      sql`select reference_id from payouts where create_outcome <> 'created' order by reference_id`,
    );
    for (const { reference_id } of unsettled.rows) await createLink(reference_id);
    // The schedulers' passes, the indexer's and whatever they make due: the world's daemon idles on.
    indexChains();
    await runJobs();
    const state = await database.db.execute<{ s: string }>(sql`
      select (select count(*) from ledger_entries)::text || '/' ||
             (select count(*) from webhook_inbox where status = 'received')::text || '/' ||
             (select count(*) from checkout_intents where settled_by is null)::text || '/' ||
             (select count(*) from chain_transfers where applied_at is null and state <> 'orphaned')::text || '/' ||
             (select count(*) from chain_transfers)::text as s`);
    const unfinished = queues.unfinished().filter((j) => j.due <= now).length;
    // Unchanged over two rounds, each a grace and more after the last: nothing is waiting.
    const signature = `${state.rows[0]?.s ?? ''}/${unfinished}`;
    if (signature === last) steady++;
    else steady = 0;
    if (steady >= 2) break;
    last = signature;
  }
  await inbox.close();
  if (process.env.SIM_STATS)
    process.stderr.write(
      `sim stats ${seed}: ${JSON.stringify({ ...interleaver.stats(), jobs: queues.stats() })}\n`,
    );
  // The reconciliation run over the world's life, as a person runs `stablebooks report` (reconChecks.ts).
  const recon = await reconcileWorld(
    {
      db: database.db,
      config,
      rpcs,
      logger,
      clock,
      balanceAt: (chainId, token, wallet, block) => chainOf(chainId).balanceOf(token, wallet, block),
    },
    EPOCH_MS,
  );

  if (process.env.SIM_DEBUG) await dumpState(database);
  problems.push(
    ...(await judge(database, world, doubles, {
      known,
      knownLinks,
      serviceSent,
      linkStatus: service.linkStatus,
      reorgFacts,
      recon,
      events,
      webhookAt: (intent, sentAt, id) => service.webhookAt(intent, sentAt, id),
    })),
  );
  for (const secret of secrets)
    if (logLines.some((l) => l.includes(secret))) problems.push('a store api_secret appears in the logs');
  const entries = await database.db.execute<{ n: string }>(
    sql`select count(*)::text as n from ledger_entries`,
  );
  return { problems, entries: Number(entries.rows[0]?.n ?? 0) };
}

interface RunFacts {
  known: ReadonlySet<string>;
  knownLinks: ReadonlySet<string>;
  serviceSent: readonly SimTransfer[];
  linkStatus: (referenceId: string) => string | undefined;
  reorgFacts: readonly ReorgFact[];
  recon: ReconOutcome;
  events: readonly SimEvent[];
  webhookAt: FindingFacts['webhookAt'];
}

async function judge(
  database: Database,
  world: World,
  doubles: ReadonlyMap<number, ChainDouble>,
  facts: RunFacts,
): Promise<string[]> {
  const chainOf = (chainId: number) => doubles.get(chainId) as ChainDouble;
  const blockOf = (txHash: string) => {
    for (const chain of doubles.values()) {
      const block = chain.blockOf(txHash);
      if (block !== undefined) return block;
    }
    return undefined;
  };
  const { known } = facts;
  const problems: string[] = [];
  const db = database.db;
  const trial = await db.execute<{ asset: string; total: string }>(
    sql`select asset, sum(amount)::text as total from ledger_postings group by asset having sum(amount) <> 0`,
  );
  for (const r of trial.rows) problems.push(`trial balance of ${r.asset} is ${r.total}, not 0`);

  const { rows } = await db.execute<{ code: string; balance: string }>(sql`
    select a.code, sum(p.amount)::text as balance
    from ledger_postings p join ledger_accounts a on a.id = p.account_id
    group by a.code having sum(p.amount) <> 0`);
  const actual = new Map(rows.map((r) => [r.code, BigInt(r.balance)]));

  // Every watched wallet's ledger balance (over the stores that share it) equals the chain's.
  for (const token of world.tokens) {
    for (const address of new Set(world.stores.map((s) => s.merchant))) {
      const owners = world.stores.filter((s) => s.merchant === address);
      const ledger = owners.reduce(
        (sum, s) => sum + (actual.get(`assets:wallet:${s.storeId}:${token.chainId}:${token.symbol}`) ?? 0n),
        0n,
      );
      const onChain = chainOf(token.chainId).balanceOf(token.address, address);
      if (ledger !== onChain)
        problems.push(
          `wallet ${address.slice(0, 10)} ${token.symbol}${on(token)}: ledger ${ledger}, chain ${onChain}`,
        );
    }
  }

  for (const token of world.tokens) {
    for (const store of world.stores) {
      const ledger = actual.get(`assets:custody:${store.storeId}:${token.chainId}:${token.symbol}`) ?? 0n;
      const onChain = chainOf(token.chainId).balanceOf(token.address, store.custody);
      if (ledger !== onChain)
        problems.push(
          `custody ${store.storeId} ${token.symbol}${on(token)}: ledger ${ledger}, chain ${onChain}`,
        );
    }
  }

  // Every claim-link pool of ours against the chain: what the books hold for a store's links
  // (claim_pool and refund_receivable) is what their pools still hold for it, less a funding fee
  // the service has not swept yet; a pool the service overdrew (a refund of a claimed link, an
  // overpayment returned) holds nothing for us.
  for (const token of world.tokens) {
    for (const store of world.stores) {
      const links = world.payouts.filter(
        (p) =>
          p.storeId === store.storeId &&
          p.token === token &&
          facts.knownLinks.has(p.referenceId) &&
          (blockOf(p.fundingTx) !== undefined ||
            (p.fundingResend !== undefined && blockOf(p.fundingResend.txHash) !== undefined)),
      );
      const chain = chainOf(token.chainId);
      let onChain = 0n;
      for (const p of links) {
        const unswept = p.F > 0n && blockOf(p.sweepTx) === undefined ? p.F : 0n;
        const held = chain.balanceOf(token.address, p.pool) - unswept;
        onChain += held > 0n ? held : 0n;
      }
      const code = (kind: string) => `${kind}:${store.storeId}:${token.chainId}:${token.symbol}`;
      const ledger =
        (actual.get(code('assets:claim_pool')) ?? 0n) + (actual.get(code('assets:refund_receivable')) ?? 0n);
      if (ledger !== onChain)
        problems.push(
          `pools of ${store.storeId} ${token.symbol}${on(token)}: ledger ${ledger}, chain ${onChain}`,
        );
    }
  }

  // Every temporary wallet of a sale against the chain: once the buyer's payment and the sweep are
  // final, what the service kept there is the fee rule 1 booked for that intent (net of reversals).
  const fees = await db.execute<{ ref_id: string; fee: string }>(sql`
    select e.ref_id, sum(p.amount)::text as fee
    from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
    where e.ref_type = 'checkout_intent' and a.code like 'expense:service_fees:%'
    group by e.ref_id`);
  const feeOf = new Map(fees.rows.map((r) => [r.ref_id, BigInt(r.fee)]));
  for (const intent of world.intents) {
    if (intent.route !== 'temp' || !intent.tx2 || finalStatus(intent) !== 20) continue;
    if (!facts.known.has(intent.id) || !inRegistry(world, intent)) continue;
    if (blockOf(intent.tx1) === undefined || blockOf(intent.tx2) === undefined) continue;
    const held = chainOf(intent.token.chainId).balanceOf(intent.token.address, intent.temp);
    const booked = feeOf.get(intent.id) ?? 0n;
    if (held !== booked)
      problems.push(`temporary wallet of ${intent.id}: fee booked ${booked}, chain ${held}`);
  }

  const mined = new Set<string>();
  for (const tx of [...worldTransfers(world).values(), ...facts.serviceSent, ...worldReplacements(world)])
    if (blockOf(tx.txHash) !== undefined) mined.add(tx.txHash);
  // Stores sharing a merchant wallet: which of them an unexplained transfer is booked to depends
  // on what stablebooks knew when it booked it (docs/decisions.md), so their wallet, suspense and
  // owner-transfer accounts are judged together, under the first of them.
  const groupOf = new Map(
    world.stores.map((s) => [
      s.storeId,
      world.stores.find((f) => f.merchant === s.merchant)?.storeId ?? s.storeId,
    ]),
  );
  const pooled = (balances: Map<string, bigint>) => {
    const out = new Map<string, bigint>();
    for (const [code, amount] of balances) {
      const [kind, sub, storeId, ...rest] = code.split(':');
      const key = ['assets:wallet', 'assets:suspense', 'equity:owner_transfers'].includes(`${kind}:${sub}`)
        ? [kind, sub, groupOf.get(storeId ?? '') ?? storeId, ...rest].join(':')
        : code;
      out.set(key, (out.get(key) ?? 0n) + amount);
    }
    return out;
  };
  const causes = new Set<string>();
  const expected = pooled(
    expectedBalances(
      {
        world,
        mined,
        known,
        knownLinks: facts.knownLinks,
        linkStatus: facts.linkStatus,
      },
      causes,
    ),
  );
  const booked = pooled(actual);
  for (const code of new Set([...expected.keys(), ...booked.keys()])) {
    const want = expected.get(code) ?? 0n;
    const got = booked.get(code) ?? 0n;
    if (want !== got) problems.push(`${code}: books ${got}, expected ${want}`);
  }
  problems.push(...facts.recon.problems);
  if (facts.recon.report)
    problems.push(...judgeReconReport(facts.recon.report, { world, known, expected, pooled }));

  // Each confirmed sale booked once: rule 1 (net of reversals) exactly once per known intent.
  const sales = await db.execute<{ ref_id: string; n: string }>(sql`
    select ref_id, (count(*) filter (where kind = 'checkout.confirmed')
                  - count(*) filter (where kind = 'checkout.confirmed.reversal'))::text as n
    from ledger_entries where ref_type = 'checkout_intent' group by ref_id`);
  const salesBooked = new Map(sales.rows.map((r) => [r.ref_id, Number(r.n)]));
  for (const intent of world.intents) {
    const want = booksSale(world, intent, known, mined) ? 1 : 0;
    const got = salesBooked.get(intent.id) ?? 0;
    if (got !== want)
      problems.push(`intent ${intent.id} (${intent.outcome}): rule 1 booked ${got} times, expected ${want}`);
  }
  problems.push(...(await judgeServiceFacts(db, world, known)));

  // Every finding the world planted is open, and every open finding has a cause (findingChecks.ts).
  problems.push(
    ...(await judgeFindings(db, {
      world,
      events: facts.events,
      known,
      knownLinks: facts.knownLinks,
      mined,
      linkStatus: facts.linkStatus,
      reorgFacts: facts.reorgFacts,
      causes,
      balanceAt: (chainId, token, wallet, block) => chainOf(chainId).balanceOf(token, wallet, block),
      webhookAt: facts.webhookAt,
      graceMs: GRACE_MS,
    })),
  );
  problems.push(...(await judgeNearMisses(db, world, { mined, known, knownLinks: facts.knownLinks })));
  problems.push(...(await judgeEvents(db, world)));
  problems.push(...(await judgeFinalStates(db, world, facts)));
  problems.push(...(await judgeAllocations(db, world, { mined, known, knownLinks: facts.knownLinks })));

  // A reorg that orphaned a block the indexer had been shown final is said loudly, on its chain;
  // no reorg_beyond_finality finding without one (oracle.ts, beyondFinality).
  const loud = await db.execute<{ ref_id: string }>(sql`
    select ref_id from findings where kind = 'reorg_beyond_finality' and resolved_at is null`);
  const verdict = beyondFinality(world, facts.reorgFacts);
  for (const chainId of doubles.keys()) {
    const open = loud.rows.filter((r) => r.ref_id.startsWith(`${chainId}:`)).length;
    const want = verdict.get(chainId);
    if (want === 'must' && open === 0)
      problems.push(
        `chain ${chainId}: a reorg orphaned a final block, and no reorg_beyond_finality finding is open`,
      );
    if (want === undefined && open > 0)
      problems.push(
        `chain ${chainId}: ${open} reorg_beyond_finality finding(s) open, and no reorg orphaned a final block`,
      );
  }
  return problems;
}

/**
 * What the service said, as the books must hold it whatever form it took: every rule-1 entry's
 * amounts (decimal strings as sent, any form) are the world's R, P, F and N, and its fiat metadata
 * the intent's price (null when priced in a coin); an intent in a look-alike contract has no
 * rule-1 entry at all and, confirmed and known, an open `unknown_token`; and no finding says
 * the service changed amounts or answered a create with other ones (it never does here).
 */
async function judgeServiceFacts(db: Db, world: World, known: ReadonlySet<string>): Promise<string[]> {
  const problems: string[] = [];
  const byId = new Map(world.intents.map((i) => [i.id, i]));
  const entries = await db.execute<{ ref_id: string; metadata: Record<string, unknown> }>(sql`
    select ref_id, metadata from ledger_entries
    where ref_type = 'checkout_intent' and kind = 'checkout.confirmed' order by id`);
  for (const { ref_id, metadata } of entries.rows) {
    const intent = byId.get(ref_id);
    if (!intent) continue;
    if (!inRegistry(world, intent)) {
      problems.push(`intent ${intent.id} in a look-alike contract has a rule-1 entry`);
      continue;
    }
    const d = intent.token.decimals;
    const amounts: Array<[string, bigint]> = [
      ['amount_coins', intent.R],
      ['actual_paid_amount', intent.P],
      ['service_fee_amount', intent.F],
      ['net_income_amount', intent.reportedNet ?? intent.P - intent.F],
    ];
    for (const [field, want] of amounts) {
      const text = metadata[field];
      let got: bigint | undefined;
      try {
        got = typeof text === 'string' ? parseDecimalAmount(text, d) : undefined;
      } catch {
        got = undefined;
      }
      if (got !== want)
        problems.push(
          `intent ${intent.id}: rule 1's ${field} is ${String(text)}, expected ${want} base units`,
        );
    }
    const fiat = intent.fiat;
    const rate = metadata.currency_rate;
    const fiatOk =
      metadata.currency === (fiat?.currency ?? null) &&
      metadata.amount_cents === (fiat ? fiat.cents.toString() : null) &&
      (fiat ? typeof rate === 'string' && sameDecimal(rate, fiat.rate) : rate === null);
    if (!fiatOk)
      problems.push(
        `intent ${intent.id}: rule 1's fiat metadata ${JSON.stringify([metadata.currency, metadata.amount_cents, rate])}, expected ${JSON.stringify(fiat ? [fiat.currency, fiat.cents.toString(), fiat.rate] : [null, null, null])}`,
      );
  }
  for (const intent of world.intents) {
    if (inRegistry(world, intent) || !known.has(intent.id) || finalStatus(intent) !== 20) continue;
    const found = await db.execute(sql`
      select 1 from findings where kind = 'unknown_token' and resolved_at is null
        and ref_type = 'checkout_intent' and ref_id = ${intent.id}`);
    if (found.rows.length === 0)
      problems.push(`intent ${intent.id} in a look-alike contract has no open unknown_token finding`);
  }
  const never = await db.execute<{ kind: string; ref_id: string }>(sql`
    select kind, ref_id from findings
    where kind in ('confirmed_amounts_changed', 'claim_link_create_mismatch', 'amount_format_error')`);
  for (const f of never.rows)
    problems.push(`finding ${f.kind} on ${f.ref_id}: the service never changed amounts`);
  return problems;
}

/** Two decimal strings of the same value ("1.08" and "1.080"). */
function sameDecimal(a: string, b: string): boolean {
  const digits = Math.max(a.split('.')[1]?.length ?? 0, b.split('.')[1]?.length ?? 0);
  try {
    return parseDecimalAmount(a, digits) === parseDecimalAmount(b, digits);
  } catch {
    return false;
  }
}

/** " on chain N" for a token of a second chain. */
function on(token: SimToken): string {
  return token.chainId === SIM_CHAIN_ID ? '' : ` on chain ${token.chainId}`;
}

/** Errors a job may meet in a faulty world and retry (a 5xx, an intent the lagging service does not know yet). */
function isExpected(err: unknown): boolean {
  const e = err as { name?: string; retryable?: boolean; code?: number };
  return (
    // conn_loss: PostgreSQL dropped the job's connection; the job is retried as any failed one.
    isConnectionLoss(err) ||
    e.name === 'SvcTransportError' ||
    e.code === 50001 ||
    e.retryable === true ||
    // A cancel the service refuses (the link was claimed first), a create whose answer was lost.
    e.name === 'PayoutStateError' ||
    e.name === 'PayoutCreateError'
  );
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // A failed query's reason is its cause's (PostgreSQL's code and message).
  const cause = err.cause as { code?: string; message?: string } | undefined;
  const why = cause?.message ? ` (${cause.code ?? ''} ${cause.message.split('\n')[0]})` : '';
  return `${err.name}: ${err.message.split('\n')[0]}${why}`;
}

/** SIM_DEBUG: what the product stored and booked, on stderr, for reading a failure. */
async function dumpState(database: Database): Promise<void> {
  const show = async (title: string, query: ReturnType<typeof sql>) => {
    const { rows } = await database.db.execute(query);
    process.stderr.write(`-- ${title}\n${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
  };
  await show(
    'chain_transfers',
    sql`select substr(tx_hash,1,10) tx, substr(from_address,1,10) f, substr(to_address,1,10) t, value::text, state, block_number::text b, matched_as, applied_at is not null applied, unwound_at is not null unwound from chain_transfers order by block_number, log_index`,
  );
  await show('entries', sql`select kind, ref_id, idempotency_key from ledger_entries order by id`);
  await show(
    'intents',
    sql`select id, status, settled_by, substr(tx_hash,1,10) tx, tracked_at, confirmed_at from checkout_intents`,
  );
  await show(
    'allocations',
    sql`select a.id::text, substr(t.tx_hash,1,10) tx, a.side, a.obligation_type, a.obligation_id, a.purpose, a.amount::text, a.releases::text from allocations a join chain_transfers t on t.id = a.transfer_id order by a.id`,
  );
  await show('findings', sql`select kind, ref_id, resolved_at is null open from findings order by id`);
  await show(
    'payouts',
    sql`select reference_id, create_outcome, claim_link_id, substr(funding_tx_hash,1,10) funding, substr(pool_address,1,10) pool, created_at, funded_at, amount from payouts order by created_at`,
  );
  await show(
    'transfer times',
    sql`select substr(tx_hash,1,10) tx, block_time, final_at, applied_at from chain_transfers order by block_number, log_index`,
  );
}
