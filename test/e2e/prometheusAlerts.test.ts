import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rawRpc } from '../../src/devservices/anvil.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';
import { type PrometheusAlert, startPrometheus } from '../helpers/prometheus.ts';

/**
 * The real Prometheus (the Debian package's binary) scraping a running daemon and evaluating the
 * project's alert rules (grafana/alerts.rules.yml): money that reaches the merchant wallet
 * outside the books fails the balance proof and fires BalanceProofFailed; once rule 9 has booked
 * the transfer (after its grace) the next proof holds and the alert resolves.
 *
 * The rules are the project's, the waits are not: the copy Prometheus loads differs only in its
 * `for:` durations (10m becomes 2s), and Prometheus scrapes and evaluates every second. The
 * daemon runs with POLL_INTERVAL_SCALE 0.02: a balance proof every ~6 s (5 min x 0.02), the
 * rule-9 grace of an unexplained transfer ~12 s (10 min x 0.02).
 */
const pipeline = await startPipeline({ finalityDepth: 2 });
const daemon = await pipeline.startDaemon();
const prometheus = await startPrometheus({
  targets: [new URL(daemon.opsUrl).host],
  rulesFile: new URL('../../grafana/alerts.rules.yml', import.meta.url).pathname,
  forDuration: '2s',
  intervalSeconds: 1,
});
const chain = [...pipeline.sandbox.world.chains.values()][0]!;
const merchant = await chain.wallet('merchant:st_a');
const mine = (blocks: number) => rawRpc(chain.rpcUrl, 'anvil_mine', [`0x${blocks.toString(16)}`]);

async function balanceProofAlerts(state?: PrometheusAlert['state']): Promise<PrometheusAlert[]> {
  const alerts = await prometheus.alerts();
  return alerts.filter(
    (a) => a.labels.alertname === 'BalanceProofFailed' && (state === undefined || a.state === state),
  );
}

/** Every balance proof Prometheus has scraped holds (4: merchant and custody, USDT and USDC). */
async function proofsHoldInPrometheus(): Promise<boolean> {
  const samples = await prometheus.query('stablebooks_balance_proof_ok');
  return samples.length === 4 && samples.every((s) => s.value[1] === '1');
}

describe('prometheus: the project rules on the real server, scraping the daemon', () => {
  it('behavior: BalanceProofFailed fires after a transfer outside the books and resolves when they catch up', async () => {
    // The daemon's first proofs hold, and Prometheus has seen them.
    await pipeline.waitFor(
      async () => (await proofsHoldInPrometheus()) && (await balanceProofAlerts()).length === 0,
      30_000,
    );

    // Money into the merchant wallet that no intent explains, made final (2 blocks deep).
    const transfer = await chain.mint('USDT', merchant, 7n * 10n ** BigInt(chain.decimals));
    await mine(3);

    const firing = await pipeline.waitFor(async () => {
      const alerts = await balanceProofAlerts('firing');
      return alerts.length > 0 ? alerts : undefined;
    }, 40_000);
    expect(firing.map((a) => `${a.labels.role} ${a.labels.token}`)).toEqual(['merchant USDT']);
    const [alert] = firing;
    expect(alert!.labels.severity).toBe('critical');
    expect(alert!.labels.chain_id).toBe(String(chain.chainId));
    expect(Number(alert!.value)).not.toBe(1);
    expect(alert!.annotations.summary).toBe(
      `Balance proof failed for the merchant wallet, USDT on chain ${chain.chainId}`,
    );

    // Rule 9 books the transfer once its grace is over; the next proof holds and the alert goes.
    await pipeline.waitFor(
      async () => (await proofsHoldInPrometheus()) && (await balanceProofAlerts()).length === 0,
      40_000,
    );
    const { rows } = await pipeline.db.execute<{ applied: boolean }>(
      sql`select applied_at is not null as applied from chain_transfers where tx_hash = ${transfer.txHash.toLowerCase()}`,
    );
    expect(rows.map((r) => r.applied)).toEqual([true]);
  }, 90_000);
});
