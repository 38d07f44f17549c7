// The README's two pictures, taken by the project's own tooling: runs the demo (default sizes,
// seed "stablebooks"), then in headless Chromium shoots its HTML reconciliation report and the
// Overview dashboard drawn from the demo's Prometheus (scripts/screenshot-dashboard.ts), and stops
// everything:
//
//   npm run screenshots        -> docs/images/report.png, docs/images/overview.png
import { mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { runDemo } from '../src/demo/runDemo.ts';
import { chromiumBinary, screenshotDashboard } from './screenshot-dashboard.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const IMAGES = join(ROOT, 'docs/images');

async function main(): Promise<void> {
  const started = Date.now();
  const run = await runDemo({
    intents: 200,
    payouts: 20,
    seed: 'stablebooks',
    outDir: join(ROOT, '.tmp/screenshots'),
    progress: (line) => process.stderr.write(`${line}\n`),
  });
  try {
    if (!run.summary.passed) throw new Error('the demo did not pass: no pictures of a failed run');
    const prometheus = run.services.prometheus;
    if (!prometheus) throw new Error(`no Prometheus: ${run.services.prometheusProblem}`);
    mkdirSync(IMAGES, { recursive: true });
    await shootPage(run.summary.reports.html ?? '', join(IMAGES, 'report.png'));
    // A few more scrapes after the run, so the last points of every series are in.
    await new Promise((r) => setTimeout(r, 3_000));
    const dashboard = await screenshotDashboard({
      prometheusUrl: prometheus.url,
      outPath: join(IMAGES, 'overview.png'),
      windowMinutes: Math.max(1, Math.ceil((Date.now() - started) / 60_000)),
    });
    console.log(join(IMAGES, 'report.png'));
    console.log(dashboard.pngPath);
  } finally {
    await run.stop();
  }
}

/** The top of a local HTML file, 1400 px wide, as the reader first sees it. */
async function shootPage(path: string, pngPath: string): Promise<void> {
  const browser = await chromium.launch({ executablePath: chromiumBinary(), headless: true });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1800 } });
    await page.goto(`file://${path}`, { waitUntil: 'load' });
    await page.screenshot({ path: `${pngPath}.partial`, type: 'png' });
    renameSync(`${pngPath}.partial`, pngPath);
  } finally {
    await browser.close();
  }
}

main().catch((err: unknown) => {
  console.error(`screenshots: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`);
  process.exit(1);
});
