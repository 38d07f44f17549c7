import { randomBytes } from 'node:crypto';
import { createChainRpcs } from '../chain/rpcClients.ts';
import { runReconciliation } from '../recon/runReconciliation.ts';
import { startBlockMiner } from './blockMiner.ts';
import { planScenario } from './demoScenario.ts';
import { type DemoServices, startDemoServices } from './demoServices.ts';
import { buildSummary, type DemoSummary } from './demoSummary.ts';
import { type DriveResult, driveScenario } from './driveScenario.ts';
import { type SettleState, settleProgress } from './settleProgress.ts';
import { waitUntil } from './waitUntil.ts';

export interface DemoOptions {
  intents: number;
  payouts: number;
  seed: string;
  /** Where the reports and the daemon's log go. */
  outDir: string;
  /** One line per step and, while waiting, every few seconds. */
  progress: (line: string) => void;
}

export interface DemoRun {
  summary: DemoSummary;
  services: DemoServices;
  /** Stops every service the demo started (the caller decides when: at once, or on Ctrl-C with --keep). */
  stop(): Promise<void>;
}

const DAY_MS = 86_400_000;
/** The service's 14-day claim-link expiry, plus an hour so every window the checks use has passed. */
const ADVANCE_SECONDS = 14 * 86_400 + 3_600;
/** How long the daemon may take to settle what the scenario did, per wait. */
const SETTLE_MS = 120_000;

/**
 * The whole demo: services up, the seeded scenario driven, the daemon given time to settle what
 * it can, 14 days passed on the sandbox's clock (timeouts, expiries, late webhooks), settled
 * again, one reconciliation run over the demo's time span, and the summary of it all.
 */
export async function runDemo(options: DemoOptions): Promise<DemoRun> {
  const started = performance.now();
  const timings: Record<string, number> = {};
  const lap = (name: string, since: number) => {
    timings[name] = Math.round(performance.now() - since);
    return performance.now();
  };
  const scenario = planScenario({ seed: options.seed, intents: options.intents, payouts: options.payouts });

  options.progress('starting PostgreSQL, Redis, anvil, the sandbox and the daemon (all roles)');
  let t = performance.now();
  const services = await startDemoServices({
    seed: options.seed,
    outDir: options.outDir,
    adminToken: randomBytes(12).toString('hex'),
  });
  const miner = startBlockMiner(services.chain.rpcUrl, 250);
  const stop = async () => {
    await miner.stop();
    await services.stop();
  };
  try {
    t = lap('servicesMs', t);
    const realStart = services.sandbox.world.clock.now().getTime();
    const driven = await driveScenario(services, scenario, miner, options.progress);
    t = lap('driveMs', t);

    options.progress('waiting for the daemon to book every payment and payout it can see');
    await settle(services, driven, 'before', options.progress);
    options.progress('14 days pass on the sandbox clock: timeouts, claim-link expiries, delayed webhooks');
    await services.sandbox.world.clock.advance(ADVANCE_SECONDS);
    await settle(services, driven, 'after', options.progress);
    t = lap('settleMs', t);

    options.progress('reconciliation run: proofs, clearing, matching, assertions, findings, report');
    const recon = await runReconciliation(
      {
        db: services.deps.db,
        config: services.config,
        rpcs: createChainRpcs(services.config, services.daemon.metrics),
        logger: services.logger,
        clock: services.sandbox.world.clock,
        metrics: services.daemon.metrics,
      },
      {
        // Whole UTC days, from the demo's first to the one the clock reached; every store.
        period: {
          from: utcDay(realStart),
          to: new Date(utcDay(services.sandbox.world.clock.now().getTime()).getTime() + DAY_MS),
        },
        storeId: null,
        outDir: `${options.outDir}/report`,
        onProgress: (p) => options.progress(`  reconciliation: ${p.phase} (${p.done}/${p.total})`),
      },
    );
    lap('reconMs', t);
    timings.totalMs = Math.round(performance.now() - started);
    const summary = await buildSummary(
      services.database.pool,
      scenario,
      driven,
      recon,
      timings,
      await apiOutcomes(services),
    );
    return { summary, services, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The daemon's calls to the service by outcome, summed over endpoints, from its metrics registry. */
async function apiOutcomes(services: DemoServices): Promise<Map<string, number>> {
  const metric = (await services.daemon.metrics.registry.getMetricsAsJSON()).find(
    (m) => m.name === 'stablebooks_api_requests_total',
  );
  const out = new Map<string, number>();
  for (const v of (metric?.values ?? []) as Array<{ value: number; labels: Record<string, string | number> }>)
    out.set(String(v.labels.outcome), (out.get(String(v.labels.outcome)) ?? 0) + v.value);
  return out;
}

function utcDay(ms: number): Date {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS);
}

/**
 * Waits until the daemon has booked what it can of the scenario: before the clock moves, every
 * paid intent in its final status and proven on chain, every claim and cancel refund booked;
 * after, the timeouts and expiry refunds too, and no webhook waiting in the inbox.
 */
async function settle(
  services: DemoServices,
  driven: DriveResult,
  when: 'before' | 'after',
  progress: (line: string) => void,
): Promise<void> {
  let state: SettleState | undefined;
  let lastPrint = 0;
  try {
    await waitUntil(
      `the daemon settling the scenario (${when} the clock moved)`,
      async () => {
        state = await settleProgress(services.database.pool, driven, when);
        if (Date.now() - lastPrint > 3_000) {
          lastPrint = Date.now();
          progress(`  ${describe(state)}`);
        }
        return state.done;
      },
      SETTLE_MS,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; still waiting: ${state ? describe(state) : 'nothing read'}`);
  }
}

function describe(s: SettleState): string {
  return (
    `intents ${s.intents.done}/${s.intents.total} in their final status, ` +
    `payments proven ${s.proofs.done}/${s.proofs.total}, payouts ${s.payouts.done}/${s.payouts.total}, ` +
    `webhooks waiting ${s.webhooksWaiting}` +
    (s.waitingOn.length > 0 ? ` (waiting on ${s.waitingOn.join(', ')})` : '')
  );
}
