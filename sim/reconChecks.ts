import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChainRpc } from '../src/chain/rpcClients.ts';
import type { Clock } from '../src/clock.ts';
import type { Config, ReconSettings } from '../src/config/loadConfig.ts';
import type { Db } from '../src/db/database.ts';
import type { Logger } from '../src/logging/logger.ts';
import { parseDecimalAmount } from '../src/money/decimalAmount.ts';
import type { Period } from '../src/recon/period.ts';
import type { ProofRow, ReconReport } from '../src/recon/report/reportModel.ts';
import { runReconciliation } from '../src/recon/runReconciliation.ts';
import { type Balances, finalStatus, inRegistry } from './oracle.ts';
import type { World } from './world.ts';

/**
 * The reconciliation run's windows in a world. Quiescence ends after at least three quiet rounds
 * of six hours past the world's last event, so every window here is shorter than the time the
 * world has been quiet: what a window decides never depends on where in a round the world's last
 * fact fell. RECON_WEBHOOK_MINUTES and RECON_IN_TRANSIT_MINUTES keep their defaults; the stuck
 * window is 6 h, not 24 h, so an intent the service leaves open (the stuck_intent shape) is stuck
 * by the end in every world; the refund grace is 6 h so a refund that never completes is overdue.
 */
const HOUR = 3_600_000;
export const SIM_RECON: ReconSettings = {
  inTransitWindowMs: HOUR,
  webhookWindowMs: HOUR,
  stuckMs: 6 * HOUR,
  amountTolerance: 0n,
};
export const SIM_REFUND_GRACE_MS = 6 * HOUR;

const DAY = 86_400_000;

export interface ReconWorldDeps {
  db: Db;
  config: Pick<Config, 'stores' | 'chains'>;
  rpcs: ReadonlyMap<number, ChainRpc>;
  logger: Logger;
  clock: Clock;
  /** The chain doubles' balanceOf at a block, which a world may drive below zero. */
  balanceAt: (chainId: number, token: string, wallet: string, block: bigint) => bigint;
}

/** What the run gave: its report, or why it could not run; and what it said of itself. */
export interface ReconOutcome {
  report: ReconReport | null;
  problems: string[];
}

/**
 * One unscoped reconciliation run over the world's whole life, as `stablebooks report` runs it:
 * whole UTC days from the world's start to the day after the clock's now (a period is half-open,
 * and a posting at `now` must be in it). Every report format is written, into a folder of its own
 * removed afterwards, so the renderers meet the world's amounts too. It must prove its books: a
 * run that does not pass (the CLI's exit 1) is a problem naming its failing checks, save a
 * balance proof of a wallet the world overdrew (below).
 */
export async function reconcileWorld(deps: ReconWorldDeps, startMs: number): Promise<ReconOutcome> {
  const now = deps.clock.now().getTime();
  const period: Period = {
    from: new Date(Math.floor(startMs / DAY) * DAY),
    to: new Date((Math.floor(now / DAY) + 1) * DAY),
  };
  const dir = await mkdtemp(join(tmpdir(), 'sim-recon-'));
  try {
    const result = await runReconciliation(
      {
        db: deps.db,
        config: { ...deps.config, recon: SIM_RECON, refundGraceMs: SIM_REFUND_GRACE_MS, reportsDir: dir },
        rpcs: new Map(deps.rpcs),
        logger: deps.logger,
        clock: deps.clock,
      },
      { period, outDir: join(dir, 'report') },
    );
    const problems: string[] = [];
    // A proof the chain could not answer because the world overdrew the wallet (balanceOf below
    // zero at the proof block) is the world's impossibility, not the books': it alone does not
    // fail the run. Any other proof that is not a pass does.
    const overdrawn = (p: ProofRow) =>
      p.result === 'error' &&
      p.blockNumber !== null &&
      deps.balanceAt(p.chainId, p.token, p.wallet, BigInt(p.blockNumber)) < 0n;
    const unproven = result.report.balanceProofs.filter((p) => p.result !== 'pass' && !overdrawn(p));
    const failing = result.report.checks.filter((c) =>
      c.status === 'error'
        ? c.name !== 'assertions.balance_proofs' || unproven.length > 0
        : c.layer === 'assertions' && c.status !== 'pass',
    );
    if (failing.length > 0) {
      const proofs = unproven.map(
        (p) =>
          `${p.role} ${p.wallet.slice(0, 10)} ${p.symbol}: ${p.result} (ledger ${p.ledgerBalance}, chain ${p.chainBalance ?? '?'}${p.error ? `, ${p.error}` : ''})`,
      );
      problems.push(
        `reconciliation run did not pass: ${failing.map((c) => `${c.name} ${c.status} (${c.count})`).join(', ')}${proofs.length ? `; ${proofs.join('; ')}` : ''}`,
      );
    }
    return { report: result.report, problems };
  } catch (err) {
    const message = err instanceof Error ? `${err.name}: ${err.message.split('\n')[0]}` : String(err);
    return { report: null, problems: [`reconciliation run threw: ${message}`] };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** What the report's totals are judged against: the oracle's books and the world's intents. */
export interface ReconTruth {
  world: World;
  known: ReadonlySet<string>;
  /** The oracle's expected balances, grouped as judge groups them (stores sharing a wallet). */
  expected: Balances;
  /** judge's grouping of account codes, applied to the report's closings the same way. */
  pooled: (balances: Balances) => Balances;
}

/**
 * The report's totals against the oracle's, never against the books the product keeps:
 * - every account's closing balance (report.accounts, the period being the world's whole life)
 *   equals the oracle's expected balance for its code;
 * - the confirmed payments per store, chain and token (report.payments.byStatus, CONFIRMED):
 *   count, requested, paid, fees and net equal the sums of R, P, F and the reported net (P - F,
 *   unless fee_mismatch made the service say otherwise) over the intents the service confirmed in
 *   the end that stablebooks knows, in a registry token (the report counts by status: one whose
 *   figures wait for the chain's net is counted all the same).
 * Left out: the payouts' totals (their closings are in the accounts already, and equal payouts
 * whose pools only their order tells apart may swap outcomes), fiat totals and per-day rows (the
 * same intents regrouped), and the suspense block (the accounts hold its sum).
 */
export function judgeReconReport(report: ReconReport, truth: ReconTruth): string[] {
  const problems: string[] = [];
  const closings: Balances = new Map();
  for (const a of report.accounts) closings.set(a.code, signedUnits(a.closing, a.decimals));
  const got = truth.pooled(closings);
  for (const code of new Set([...truth.expected.keys(), ...got.keys()])) {
    const want = truth.expected.get(code) ?? 0n;
    const have = got.get(code) ?? 0n;
    if (want !== have) problems.push(`report: ${code} closes at ${have}, expected ${want}`);
  }

  type Sums = { count: number; R: bigint; P: bigint; F: bigint; N: bigint };
  const zero = (): Sums => ({ count: 0, R: 0n, P: 0n, F: 0n, N: 0n });
  const want = new Map<string, Sums>();
  for (const i of truth.world.intents) {
    if (finalStatus(i) !== 20 || !truth.known.has(i.id) || !inRegistry(truth.world, i)) continue;
    const key = `${i.storeId}:${i.token.chainId}:${i.token.symbol}`;
    const s = want.get(key) ?? zero();
    const N = i.reportedNet ?? i.P - i.F;
    want.set(key, { count: s.count + 1, R: s.R + i.R, P: s.P + i.P, F: s.F + i.F, N: s.N + N });
  }
  const have = new Map<string, Sums>();
  for (const row of report.payments.byStatus) {
    if (row.status !== 'CONFIRMED') continue;
    const token = truth.world.tokens.find((t) => t.chainId === row.chainId && t.symbol === row.symbol);
    const d = token?.decimals ?? 0;
    have.set(`${row.storeId}:${row.chainId}:${row.symbol}`, {
      count: row.count,
      R: parseDecimalAmount(row.requested, d),
      P: parseDecimalAmount(row.paid, d),
      F: parseDecimalAmount(row.fees, d),
      N: parseDecimalAmount(row.net, d),
    });
  }
  const show = (s: Sums) => `${s.count} intents, R ${s.R}, P ${s.P}, F ${s.F}, N ${s.N}`;
  for (const key of new Set([...want.keys(), ...have.keys()])) {
    const [w, h] = [want.get(key) ?? zero(), have.get(key) ?? zero()];
    if (show(w) !== show(h))
      problems.push(`report: confirmed payments of ${key}: ${show(h)}, expected ${show(w)}`);
  }
  return problems;
}

/** A report amount in base units: parseDecimalAmount takes no sign, and a credit balance has one. */
function signedUnits(text: string, decimals: number): bigint {
  return text.startsWith('-')
    ? -parseDecimalAmount(text.slice(1), decimals)
    : parseDecimalAmount(text, decimals);
}
