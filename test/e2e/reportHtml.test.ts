import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../src/config/chainRegistry.ts';
import { renderHtml } from '../../src/recon/report/renderHtml.ts';
import type { ReconReport } from '../../src/recon/report/reportModel.ts';
import { sampleReport, UNMATCHED_IN_TX } from '../helpers/reportFixture.ts';

/**
 * The HTML report in a real browser (the system Chromium, driven by playwright-core, which never
 * downloads one): it renders without errors, draws every chart, and fetches nothing but itself.
 * The page and a screenshot stay in test-artifacts/report/ for a human to look at; with
 * UPDATE_SCREENSHOTS=1 the screenshot of the passing report also replaces docs/images/report.png
 * (the top of the page, 1400 px wide, as scripts/screenshots.ts shoots the demo's), so CI's tree
 * stays clean.
 */
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/report/', import.meta.url));
const README_IMAGE = fileURLToPath(new URL('../../docs/images/report.png', import.meta.url));
const chains = createChainRegistry();
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
  writeFileSync(path, renderHtml(report, { chains }));
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
  it('behavior: renders every chart and loads nothing but itself', async () => {
    const { page, url, requests, errors } = await open(sampleReport(), 'report.html');
    try {
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
          /: -?\d{1,3}(,\d{3})*(\.\d+)?$/,
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

  it('behavior: a passing report says the books balance and match the chain, in words a person reads', async () => {
    const { page, url, requests, errors } = await open(sampleReport(), 'report-read.html');
    try {
      const headline = page.locator('#headline');
      await expect(headline.isVisible()).resolves.toBe(true);
      await expect(headline.locator('h2').textContent()).resolves.toBe('Books balance and match the chain');
      await expect(headline.getAttribute('class')).resolves.toBe('ok');

      const text = await page.locator('body').textContent();
      // The period as dates: from 1 November up to (not including) 8 November.
      expect(text).toContain('1–7 November 2026 (UTC)');
      expect(text).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
      // Account statements: debit and credit columns, positive amounts, thousands separators.
      const statements = page.locator('#accounts table');
      const headers = await statements.locator('thead th').allTextContents();
      expect(headers).toEqual(expect.arrayContaining(['Debit', 'Credit']));
      const sales = await statements.locator('tr', { hasText: 'income:sales' }).textContent();
      expect(sales).toContain('2,101.25');
      expect(sales).not.toContain('-2,101.25');
      expect(sales).not.toContain('-2101.25');
      // Findings as sentences, with the amount written for a person and the hash linked.
      expect(text).toContain(
        'A transfer of 1,250.00 USDT into the merchant wallet of st_a matched no payment (tx 0xab58…a5cd).',
      );
      expect(text).not.toContain('{"');
      const link = page.locator(`a[href="https://etherscan.io/tx/${UNMATCHED_IN_TX}"]`).first();
      await expect(link.textContent()).resolves.toBe('0xab58…a5cd');
      await expect(link.getAttribute('rel')).resolves.toBe('noopener');
      // Base's explorer for a transfer on Base.
      await expect(
        page.locator('a[href^="https://basescan.org/tx/0x9f86d0"]').count(),
      ).resolves.toBeGreaterThan(0);
      // The chart's days read as dates, its amounts with separators.
      const labels = await page.locator('svg#chart-volume text.xlabel').allTextContents();
      expect(labels[0]).toBe('1 Nov');
      expect(labels).toContain('3 Nov');
      // Fiat totals of fiat-priced intents.
      expect(text).toContain('3,120.40 EUR');

      const screenshot = join(ARTIFACTS, 'report-top.png');
      await page.setViewportSize({ width: 1400, height: 1800 });
      await page.screenshot({ path: screenshot });
      expect(statSync(screenshot).size).toBeGreaterThan(10 * 1024);
      if (process.env.UPDATE_SCREENSHOTS === '1') copyFileSync(screenshot, README_IMAGE);

      expect(errors).toEqual([]);
      expect(requests).toEqual([url]);
    } finally {
      await page.close();
    }
  });

  it('behavior: failed checks are a warning that lists them, never a pass box above them', async () => {
    const { page, errors } = await open(sampleReport({}, { failedChecks: true }), 'report-attention.html');
    try {
      const headline = page.locator('#headline');
      await expect(headline.locator('h2').textContent()).resolves.toBe('2 checks need attention');
      await expect(headline.getAttribute('class')).resolves.toBe('warning');
      const text = await headline.textContent();
      expect(text).toContain('clearing.in_transit');
      expect(text).toContain('2 transfers matched no payment');
      expect(text).not.toMatch(/\bPASS\b|Books balance and match the chain/);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('behavior: a failed proof is critical: the books are not proven', async () => {
    const { page, url, requests, errors } = await open(
      sampleReport({}, { failedProof: true }),
      'report-failed.html',
    );
    try {
      const headline = page.locator('#headline');
      await expect(headline.isVisible()).resolves.toBe(true);
      await expect(headline.getAttribute('class')).resolves.toBe('critical');
      await expect(headline.locator('h2').textContent()).resolves.toBe('1 check needs attention');
      const text = await headline.textContent();
      expect(text).toContain('assertions.balance_proofs');
      expect(text).toMatch(
        /custody wallet .* on Ethereum: the ledger says 10\.00 USDT, the chain 9\.999999 USDT/,
      );
      expect(text).not.toMatch(/\bPASS\b|Books balance/);
      expect(errors).toEqual([]);
      expect(requests).toEqual([url]);
    } finally {
      await page.close();
    }
  });
});
