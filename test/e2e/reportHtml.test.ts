import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderHtml } from '../../src/recon/report/renderHtml.ts';
import type { ReconReport } from '../../src/recon/report/reportModel.ts';
import { sampleReport } from '../helpers/reportFixture.ts';

/**
 * The HTML report in a real browser (the system Chromium, driven by playwright-core, which never
 * downloads one): it renders without errors, draws every chart, and fetches nothing but itself.
 * The page and a screenshot stay in test-artifacts/report/ for a human to look at.
 */
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/report/', import.meta.url));
const CHARTS = ['chart-volume', 'chart-fees', 'chart-net', 'chart-findings'];

function chromiumPath(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(
      'chromium is not installed: run scripts/ensure-deps.sh as root, or apt-get install -y chromium',
    );
  }
}

let browser: Browser;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({ executablePath: chromiumPath(), headless: true });
});

afterAll(async () => {
  await browser?.close();
});

interface Opened {
  page: Page;
  url: string;
  requests: string[];
  errors: string[];
}

async function open(report: ReconReport, file: string): Promise<Opened> {
  const path = join(ARTIFACTS, file);
  writeFileSync(path, renderHtml(report));
  const url = pathToFileURL(path).href;
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  await page.goto(url, { waitUntil: 'load' });
  return { page, url, requests, errors };
}

describe('HTML report in Chromium', () => {
  it('behavior: renders every chart, the pass banner, and loads nothing but itself', async () => {
    const { page, url, requests, errors } = await open(sampleReport(), 'report.html');
    try {
      const banner = page.locator('#banner');
      await expect(banner.isVisible()).resolves.toBe(true);
      await expect(banner.getAttribute('class')).resolves.toBe('pass');

      for (const id of CHARTS) {
        const svg = page.locator(`svg#${id}`);
        await expect(svg.count()).resolves.toBe(1);
        const box = await svg.boundingBox();
        expect(box?.width, id).toBeGreaterThan(100);
        const bars = await svg.locator('rect.bar').all();
        expect(bars.length, id).toBeGreaterThan(0);
        const heights = await Promise.all(bars.map(async (bar) => Number(await bar.getAttribute('height'))));
        for (const height of heights)
          expect(Number.isFinite(height) && height >= 0, `${id}: ${height}`).toBe(true);
        const tall = heights.filter((h) => h > 0);
        expect(tall.length, id).toBeGreaterThan(0);
        // The drawn size, not only the attribute: a CSS mistake could collapse the svg.
        const drawn = await bars[heights.indexOf(Math.max(...heights))]!.boundingBox();
        expect(drawn?.height, id).toBeGreaterThan(1);
        await expect(svg.locator('rect.bar title').first().textContent()).resolves.toMatch(
          /: -?\d+(\.\d+)?$/,
        );
      }

      // The hostile finding detail is shown as text, not run.
      await expect(
        page.getByText('<script>alert(1)</script>', { exact: false }).count(),
      ).resolves.toBeGreaterThan(0);

      const screenshot = join(ARTIFACTS, 'report.png');
      await page.screenshot({ path: screenshot, fullPage: true });
      expect(statSync(screenshot).size).toBeGreaterThan(10 * 1024);

      expect(errors).toEqual([]);
      expect(requests).toEqual([url]);
    } finally {
      await page.close();
    }
  });

  it('behavior: a failed proof shows the fail banner', async () => {
    const { page, url, requests, errors } = await open(
      sampleReport({}, { failedProof: true }),
      'report-failed.html',
    );
    try {
      const banner = page.locator('#banner');
      await expect(banner.isVisible()).resolves.toBe(true);
      await expect(banner.getAttribute('class')).resolves.toBe('fail');
      await expect(banner.textContent()).resolves.toContain('assertions.balance_proofs: fail');
      expect(errors).toEqual([]);
      expect(requests).toEqual([url]);
    } finally {
      await page.close();
    }
  });
});
