import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { DemoSummary } from '../../src/demo/demoSummary.ts';
import { parseDecimalAmount } from '../../src/money/decimalAmount.ts';
import { type CliRun, runCli } from '../helpers/runCli.ts';

/**
 * `stablebooks demo` as a newcomer runs it: the real binary in a child process, starting its own
 * PostgreSQL, Redis, anvil, sandbox and daemon, at the smallest size that still plants every
 * problem. Run twice with one seed: the summaries must be equal but for timings and paths.
 */
const SIZE = ['--intents', '16', '--payouts', '3'];

async function demo(seed: string): Promise<{ run: CliRun; summary: DemoSummary; out: string }> {
  const out = await mkdtemp(join(tmpdir(), 'sb-demo-'));
  const run = await runCli(
    ['demo', ...SIZE, '--seed', seed, '--out', out, '--json'],
    {},
    { timeoutMs: 240_000 },
  );
  expect(run.code, run.stderr.split('\n').slice(-15).join('\n')).toBe(0);
  return { run, summary: JSON.parse(run.stdout) as DemoSummary, out };
}

const first = await demo('e2e-seed');

/** What each outcome's intents must be booked as (docs/accounting.md; debit +, credit -). */
const CONFIRMED_ROUTED = [
  'chain.payment_proven assets:in_transit -',
  'chain.payment_proven assets:wallet +',
  'checkout.confirmed assets:in_transit +',
  'checkout.confirmed expense:service_fees +',
  'checkout.confirmed income:sales -',
];
const EXPECTED_ENTRIES: Record<string, string[]> = {
  'exact temp_wallet': CONFIRMED_ROUTED,
  // The direct route charges no service fee: no fee line.
  'exact direct': CONFIRMED_ROUTED.filter((l) => !l.includes('service_fees')),
  'fee_mismatch temp_wallet': CONFIRMED_ROUTED,
  'underpaid_accepted temp_wallet': [
    ...CONFIRMED_ROUTED,
    'checkout.confirmed expense:sales_shortfall +',
  ].sort(),
  'overpaid temp_wallet': [
    ...CONFIRMED_ROUTED,
    'checkout.confirmed liability:customer_overpayments -',
  ].sort(),
  'overpaid direct': [
    ...CONFIRMED_ROUTED.filter((l) => !l.includes('service_fees')),
    'checkout.confirmed liability:customer_overpayments -',
  ].sort(),
  'underpaid_returned temp_wallet': [],
  'underpaid_returned direct': [],
  'kyt_rejected temp_wallet': [],
  'manual_review temp_wallet': [],
  'timed_out temp_wallet': [],
  'timed_out direct': [],
};
const EXPECTED_STATUS: Record<string, string> = {
  exact: 'CONFIRMED',
  fee_mismatch: 'CONFIRMED',
  underpaid_accepted: 'CONFIRMED',
  overpaid: 'CONFIRMED',
  underpaid_returned: 'UNDERPAID',
  kyt_rejected: 'REJECTED',
  manual_review: 'MANUAL_OPERATION',
  timed_out: 'TIMEOUT',
};

describe('stablebooks demo', () => {
  it('behavior: every planted problem is found, the proofs pass and the trial balance is zero', () => {
    const s = first.summary;
    expect(s.passed).toBe(true);
    expect(s.sizes).toEqual({ intents: 16, payouts: 3 });
    expect(s.planted.map((p) => p.expected)).toEqual([
      'missing_webhook',
      'fee_arithmetic_mismatch',
      'underpaid',
      'overpaid',
      'stuck_intent',
      'unmatched_transfer_in (suspense)',
      'reorged_transfer, proof reversed, proven again',
      'not read, not booked',
      'each payment booked once',
      'retried; every payment booked once',
    ]);
    for (const p of s.planted) {
      expect(p.count, p.problem).toBeGreaterThan(0);
      expect(p.found, p.problem).toBe(p.count);
    }
    // The findings table agrees with the planted list, by kind.
    const kinds = new Map(s.findings.map((f) => [f.kind, f.open + f.resolved]));
    for (const kind of ['missing_webhook', 'fee_arithmetic_mismatch', 'stuck_intent', 'reorged_transfer'])
      expect(kinds.get(kind), kind).toBeGreaterThan(0);
    expect(s.proofs.map((p) => `${p.wallet} ${p.symbol} ${p.result}`)).toEqual([
      'custody USDC pass',
      'custody USDT pass',
      'merchant USDC pass',
      'merchant USDT pass',
    ]);
    for (const p of s.proofs) expect(p.ledger).toBe(p.chain);
    expect(s.trialBalance.map((t) => `${t.symbol} ${t.net}`)).toEqual(['USDC 0', 'USDT 0']);
    expect(s.invariants.every((i) => i.ok)).toBe(true);
  });

  it('behavior: the entries per outcome are those of docs/accounting.md', () => {
    const s = first.summary;
    expect(s.intents.reduce((n, r) => n + r.count, 0)).toBe(16 - 1); // the reorged payment is a planted problem
    for (const row of s.intents) {
      const key = `${row.outcome} ${row.route}`;
      expect(EXPECTED_ENTRIES[key], `no expectation for ${key}`).toBeDefined();
      expect(row.entries, key).toEqual(EXPECTED_ENTRIES[key]);
      expect(row.statuses, key).toEqual([EXPECTED_STATUS[row.outcome]]);
      expect(row.mismatched, key).toEqual([]);
    }
    const payouts = new Map(
      s.payouts.map((p) => [p.outcome, [...new Set(p.entries.map((e) => e.split(' ')[0]))]]),
    );
    expect(payouts.get('claimed')).toEqual([
      'claim_link.claimed',
      'claim_link.funded',
      'claim_link.funding_fee',
    ]);
    for (const outcome of ['cancelled', 'expired'] as const)
      expect(payouts.get(outcome), outcome).toEqual(
        [
          `claim_link.${outcome}`,
          'claim_link.funded',
          'claim_link.funding_fee',
          'claim_link.refunded',
        ].sort(),
      );
    // The report's confirmed totals count the same payments (plus the reorged one, proven again).
    const confirmed = s.intents.filter((r) => r.statuses[0] === 'CONFIRMED').reduce((n, r) => n + r.count, 0);
    expect(s.totals.reduce((n, t) => n + t.count, 0)).toBe(confirmed + 1);
    for (const t of s.totals) expect(parseDecimalAmount(t.paid, 6), t.symbol).toBeGreaterThan(0n);
  });

  it('behavior: the reports are written, and progress went to stderr while the JSON went to stdout', () => {
    const s = first.summary;
    for (const path of [s.reports.html, s.reports.json, s.reports.markdown])
      expect(path && existsSync(path), String(path)).toBe(true);
    const report = JSON.parse(readFileSync(s.reports.json as string, 'utf8')) as { passed: boolean };
    expect(report.passed).toBe(true);
    expect(first.run.stderr).toMatch(/waiting for the daemon/);
    expect(first.run.stderr).toMatch(/reconciliation: files/);
  });

  it('security: the store api_secret never reaches the output or the daemon log', () => {
    const log = readFileSync(join(first.out, 'daemon.log'), 'utf8');
    expect(log.length).toBeGreaterThan(0);
    for (const text of [first.run.stdout, first.run.stderr, log]) expect(text).not.toMatch(/sk_demo_/);
  });

  it('behavior: the same seed gives the same summary (amounts, counts, findings)', async () => {
    const second = await demo('e2e-seed');
    const comparable = (s: DemoSummary) => ({ ...s, timings: null, reports: null });
    expect(comparable(second.summary)).toEqual(comparable(first.summary));
  }, 300_000);
});

describe('stablebooks demo: bad input', () => {
  it('error: a size that is not a number, or too small to plant every problem, is one line and starts nothing', async () => {
    const notNumber = await runCli(['demo', '--intents', 'lots']);
    expect(notNumber.code).toBe(1);
    expect(notNumber.stderr.trim().split('\n')).toEqual([
      'stablebooks: --intents: lots is not a whole number',
    ]);
    const tooSmall = await runCli(['demo', '--intents', '3']);
    expect(tooSmall.code).toBe(1);
    expect(tooSmall.stderr.trim().split('\n')).toEqual([
      'stablebooks: --intents must be a whole number from 16 to 5000',
    ]);
  });
});

describe('stablebooks demo --keep', () => {
  it('behavior: everything stays up with its URLs printed, and Ctrl-C stops it all', async () => {
    const out = await mkdtemp(join(tmpdir(), 'sb-demo-keep-'));
    const bin = fileURLToPath(new URL('../../bin/stablebooks.js', import.meta.url));
    const child = spawn(process.execPath, [bin, 'demo', ...SIZE, '--seed', 'keep', '--out', out, '--keep'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const end = Date.now() + 180_000;
      while (!stderr.includes('Ctrl-C stops it')) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`no --keep banner:\n${stderr}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      const url = (label: string) => new RegExp(`  ${label} +(\\S+)`).exec(stderr)?.[1] ?? '';
      // Values read from PostgreSQL are cached for 5 s per scrape: the run's shows within a few.
      let metrics = '';
      for (let i = 0; i < 40 && !/stablebooks_recon_last_passed\{scope="all"\} 1/.test(metrics); i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 500));
        const res = await fetch(url('metrics'));
        expect(res.status).toBe(200);
        metrics = await res.text();
      }
      expect(metrics).toMatch(/stablebooks_recon_last_passed\{scope="all"\} 1/);
      const prometheus = await fetch(`${url('Prometheus')}/api/v1/query?query=up`);
      expect(((await prometheus.json()) as { status: string }).status).toBe('success');
      expect((await fetch(url('sandbox'))).status).toBe(200);
      expect(stderr).toMatch(/docker run [\s\S]*grafana\/grafana:/);
      expect(existsSync(join(out, 'grafana', 'datasources', 'prometheus.yml'))).toBe(true);

      child.kill('SIGINT');
      expect(await exited).toBe(0);
      await expect(fetch(url('metrics'))).rejects.toThrow();
      await expect(fetch(url('sandbox'))).rejects.toThrow();
    } finally {
      // A failed assertion still stops the demo's servers: SIGINT first (SIGKILL would orphan them).
      if (child.exitCode === null) {
        child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }
    }
  }, 240_000);
});
