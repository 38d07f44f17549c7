import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { screenshotDashboard } from '../../scripts/screenshot-dashboard.ts';
import { startEphemeralPrometheus } from '../../src/devservices/prometheus.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * The README's screenshot path end to end: a running daemon with a few payments booked, the real
 * Prometheus (src/devservices/prometheus.ts) scraping it every second, and the screenshot script's
 * function drawing the Overview dashboard from it in headless Chromium. The page and the PNG stay
 * in test-artifacts/dashboard/ for a human to look at.
 */
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/dashboard/', import.meta.url));

const pipeline = await startPipeline({ finalityDepth: 2 });
const daemon = await pipeline.startDaemon();
const prometheus = await startEphemeralPrometheus({
  targets: [new URL(daemon.opsUrl).host],
  scrapeIntervalSeconds: 1,
});
afterAll(() => prometheus.stop(), 30_000);
const client = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 3 } });

async function paidIntent(amountCents: bigint, stableCoin: 1 | 2): Promise<void> {
  const created = await client.createCheckoutIntent({ stable_coin: stableCoin, amount_cents: amountCents });
  const res = await pipeline.sandbox.control(
    `/_sandbox/intents/${created.allsvc_checkout_intent_id}/pay`,
    {},
  );
  expect(res.status).toBe(200);
}

/** The number of samples Prometheus holds of `selector` over the last minute (largest series). */
async function samplesOf(selector: string): Promise<number> {
  const samples = await prometheus.query(`max(count_over_time(${selector}[1m]))`);
  return Number(samples[0]?.value ?? 0);
}

/** The PNG's width and height, from its IHDR chunk. */
function pngSize(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

describe('dashboard screenshot: the Overview dashboard from a real Prometheus', () => {
  it('behavior: draws the daemon figures into a PNG, with numbers in the core stat panels', async () => {
    // One sale, seen by Prometheus, then two more: the day's growth of income:sales (a delta()
    // over the samples Prometheus holds) is then above zero, as on a real morning.
    await paidIntent(2500n, 1);
    await pipeline.waitFor(
      async () => (await samplesOf('stablebooks_ledger_balance{account="income:sales"}')) >= 2,
      30_000,
    );
    await Promise.all([paidIntent(1200n, 2), paidIntent(990n, 1)]);
    await pipeline.waitFor(async () => {
      const grown = await prometheus.query(
        '-sum(delta(stablebooks_ledger_balance{account="income:sales",token="USDT"}[1h]))',
      );
      return Number(grown[0]?.value ?? 0) > 0 && (await samplesOf('stablebooks_ledger_imbalance')) >= 3;
    }, 30_000);

    const result = await screenshotDashboard({
      prometheusUrl: prometheus.url,
      outPath: `${ARTIFACTS}overview.png`,
      htmlPath: `${ARTIFACTS}overview.html`,
      windowMinutes: 2,
    });

    expect(result.pngPath).toBe(`${ARTIFACTS}overview.png`);
    const png = readFileSync(result.pngPath);
    expect(result.bytes).toBe(png.length);
    expect(png.length).toBeGreaterThan(30_000);
    const size = pngSize(png);
    expect(size.width).toBe(1600);
    expect(size.height).toBeGreaterThan(900);

    const panels = new Map(result.panels.map((p) => [p.title, p]));
    expect(panels.size).toBe(13);
    for (const title of ['Balance proofs failing', 'Ledger imbalance']) {
      const text = panels.get(title)?.text ?? '';
      expect(text, title).not.toContain('No data');
      expect(text.split('\n').at(-1), title).toBe('0');
    }
    const moneyIn = panels.get('Money in, last 24h (sales)')?.text ?? '';
    // One value per token with a day's growth: at least the USDT one, above zero.
    const amounts = [...moneyIn.matchAll(/^(\d+\.\d\d)$/gm)].map((m) => Number(m[1]));
    expect(Math.max(0, ...amounts), moneyIn).toBeGreaterThan(0);
    expect(panels.get('Findings open by severity')?.type).toBe('timeseries');
    const html = readFileSync(`${ARTIFACTS}overview.html`, 'utf8');
    expect(html).toMatch(/<polyline class="series"/);
  }, 60_000);
});
