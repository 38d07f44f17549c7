// A PNG of a Grafana dashboard of the project, drawn from a running Prometheus by our own
// renderer (src/dashboards) in headless Chromium, for the README (docs/decisions.md says why
// not Grafana):
//
//   npm run screenshot:dashboard -- --prometheus http://127.0.0.1:9090 \
//     [--dashboard grafana/dashboards/overview.json] [--out docs/images/overview.png] \
//     [--window 30] [--html page.html]
//
// The page must render without a console error and load nothing; the PNG is the full page,
// 1600 px wide. Prints the PNG's path; on failure one line saying what went wrong, exit 1.
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { parseDashboard } from '../src/dashboards/dashboardSchema.ts';
import { createPrometheusClient } from '../src/dashboards/prometheusApi.ts';
import { queryDashboard } from '../src/dashboards/queryDashboard.ts';
import { PAGE_WIDTH, renderDashboard } from '../src/dashboards/renderDashboard.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ScreenshotDashboardOptions {
  /** Base URL of the Prometheus to query, e.g. http://127.0.0.1:9090. */
  prometheusUrl: string;
  /** Dashboard JSON (default: grafana/dashboards/overview.json of this repository). */
  dashboardPath?: string;
  /** Where the PNG goes (default: docs/images/overview.png of this repository). */
  outPath?: string;
  /** Length of the window drawn, ending now (default: the dashboard's own time range). */
  windowMinutes?: number;
  /** Also keep the rendered HTML page here. */
  htmlPath?: string;
  /** The Chromium binary (default: /usr/bin/chromium, else `chromium` on the PATH). */
  chromiumPath?: string;
}

export interface ScreenshotDashboardResult {
  /** Absolute path of the PNG written. */
  pngPath: string;
  /** Size of the PNG in bytes. */
  bytes: number;
  /** What Chromium shows in each panel (its title, type and visible text), in page order. */
  panels: Array<{ title: string; type: string; text: string }>;
}

/** Debian's Chromium; playwright-core never downloads a browser of its own. */
export function chromiumBinary(): string {
  const onPath = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  const found = ['/usr/bin/chromium', ...onPath.map((d) => join(d, 'chromium'))].find((c) => existsSync(c));
  if (!found) {
    throw new Error(
      'chromium not found: run  bash scripts/ensure-deps.sh  (as root on Debian/Ubuntu it installs the chromium package)',
    );
  }
  return found;
}

function readDashboard(path: string) {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the dashboard ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    return parseDashboard(JSON.parse(text));
  } catch (err) {
    throw new Error(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export async function screenshotDashboard(
  options: ScreenshotDashboardOptions,
): Promise<ScreenshotDashboardResult> {
  const dashboardPath = resolve(options.dashboardPath ?? join(ROOT, 'grafana/dashboards/overview.json'));
  const pngPath = resolve(options.outPath ?? join(ROOT, 'docs/images/overview.png'));
  const dashboard = readDashboard(dashboardPath);
  const results = await queryDashboard(dashboard, {
    prometheus: createPrometheusClient(options.prometheusUrl),
    ...(options.windowMinutes === undefined ? {} : { windowMinutes: options.windowMinutes }),
  });
  const html = renderDashboard(dashboard, results);
  if (options.htmlPath) {
    mkdirSync(dirname(resolve(options.htmlPath)), { recursive: true });
    writeFileSync(resolve(options.htmlPath), html);
  }

  const browser = await chromium.launch({
    executablePath: options.chromiumPath ?? chromiumBinary(),
    headless: true,
  });
  try {
    const page = await browser.newPage({
      viewport: { width: PAGE_WIDTH, height: 900 },
      deviceScaleFactor: 1,
    });
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('request', (r) => {
      if (!r.url().startsWith('data:')) problems.push(`the page loaded ${r.url()}`);
    });
    await page.setContent(html, { waitUntil: 'load' });
    const panels: ScreenshotDashboardResult['panels'] = [];
    for (const panel of await page.locator('section.panel').all()) {
      panels.push({
        title: (await panel.getAttribute('data-title')) ?? '',
        type: ((await panel.getAttribute('class')) ?? '').replace(/.*\bpanel-(\S+).*/, '$1'),
        // biome-ignore lint/performance/useDomNodeTextContent: what is on screen, one line per block, is the point
        text: await panel.innerText(),
      });
    }
    if (problems.length > 0) throw new Error(`the dashboard page is not clean: ${problems.join('; ')}`);
    mkdirSync(dirname(pngPath), { recursive: true });
    const partial = `${pngPath}.partial`;
    await page.screenshot({ path: partial, fullPage: true, type: 'png' });
    renameSync(partial, pngPath);
    return { pngPath, bytes: statSync(pngPath).size, panels };
  } finally {
    await browser.close();
  }
}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      prometheus: { type: 'string' },
      dashboard: { type: 'string' },
      out: { type: 'string' },
      window: { type: 'string' },
      html: { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (!values.prometheus)
    throw new Error('--prometheus URL is required (e.g. --prometheus http://127.0.0.1:9090)');
  let windowMinutes: number | undefined;
  if (values.window !== undefined) {
    windowMinutes = Number(values.window);
    if (!Number.isFinite(windowMinutes) || windowMinutes <= 0) {
      throw new Error(`--window takes a positive number of minutes, not "${values.window}"`);
    }
  }
  const result = await screenshotDashboard({
    prometheusUrl: values.prometheus,
    ...(values.dashboard ? { dashboardPath: values.dashboard } : {}),
    ...(values.out ? { outPath: values.out } : {}),
    ...(values.html ? { htmlPath: values.html } : {}),
    ...(windowMinutes === undefined ? {} : { windowMinutes }),
  });
  console.log(result.pngPath);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    const text = err instanceof Error ? err.message : String(err);
    console.error(`screenshot-dashboard: ${text.split('\n')[0]}`);
    process.exit(1);
  });
}
