import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { daemonEnvForConfig } from '../helpers/daemonProcess.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';
import { runCli } from '../helpers/runCli.ts';

/**
 * `stablebooks report` and `stablebooks findings` as a person runs them: bad input is one line and
 * writes nothing; a run whose proofs cannot be made exits 3 and says why; once the daemon has
 * indexed the chain the same command passes; findings can be listed and acknowledged.
 */
const pipeline = await startPipeline({ finalityDepth: 1 });
const env = daemonEnvForConfig(pipeline.config);
const secret = pipeline.config.stores[0]!.apiSecret;

async function runs(): Promise<number> {
  const { rows } = await pipeline.db.execute<{ n: string }>(sql`select count(*)::text as n from recon_runs`);
  return Number(rows[0]!.n);
}

describe('stablebooks report / findings', () => {
  it('behavior: bad input is one readable line, exit non-zero, and no run is recorded', async () => {
    for (const [args, message] of [
      [['--from', 'yesterday'], /--from: yesterday is not a date/],
      [['--from', '2026-11-21', '--to', '2026-11-20'], /--from must be before --to/],
      [['--format', 'pdf'], /--format: pdf is not one of json, csv, md, html/],
      [['--store', 'st_nope'], /--store: st_nope is not in STORES_FILE/],
    ] as const) {
      const run = await runCli(['report', ...args], env);
      expect(run.code).toBe(1);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(message);
    }
    expect(await runs()).toBe(0);
  });

  it('behavior: before the chain is indexed the proofs cannot be made: exit 3, with the reason', async () => {
    const out = mkdtempSync(join(tmpdir(), 'sb-report-'));
    const run = await runCli(['report', '--out', out, '--json'], env);
    expect(run.code).toBe(3);
    const summary = JSON.parse(run.stdout) as {
      passed: boolean;
      checks: { name: string; status: string; detail: string }[];
      files: { path: string }[];
    };
    expect(summary.passed).toBe(false);
    const proofs = summary.checks.find((c) => c.name === 'assertions.balance_proofs');
    expect(proofs).toMatchObject({ status: 'error' });
    expect(proofs?.detail).toMatch(/not been indexed yet/);
    // Progress lines on stderr, one per phase.
    expect(run.stderr).toMatch(/reconciliation: proofs \(0\/8\)/);
    expect(run.stderr).toMatch(/reconciliation: done \(8\/8\)/);
    for (const f of summary.files) expect(existsSync(f.path)).toBe(true);
    expect(run.stdout + run.stderr).not.toContain(secret);
  });

  it('behavior: once the daemon has indexed the chain the report passes, and findings are listed and acked', async () => {
    await pipeline.startDaemon(['worker', 'scheduler']);
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ f: string | null }>(
        sql`select finalized_block::text as f from chain_cursors`,
      );
      return rows[0]?.f ?? undefined;
    }, 60_000);
    const out = mkdtempSync(join(tmpdir(), 'sb-report-'));
    const run = await runCli(['report', '--format', 'md,csv', '--out', out], env);
    expect(run.stderr).not.toMatch(/stablebooks:/);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^PASS: books proven/);
    // Each store's figures in its functional currency (USD by default; no rate here: unvalued).
    expect(run.stdout).toMatch(/^st_a in USD: revenue (unvalued|-?\d+\.\d\d), service fees /m);
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toMatch(/PASS/);
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain('### In the functional currency');
    expect(existsSync(join(out, 'csv', 'trial_balance.csv'))).toBe(true);
    expect(existsSync(join(out, 'report.html'))).toBe(false);

    // The proof findings of the failed run resolved themselves.
    const list = await runCli(['findings', 'list', '--kind', 'balance_proof_failed', '--json'], env);
    expect(list.code).toBe(0);
    const found = JSON.parse(list.stdout) as { id: string; resolvedAt: string | null }[];
    expect(found.length).toBeGreaterThan(0);
    expect(found.every((f) => f.resolvedAt !== null)).toBe(true);
    const open = await runCli(
      ['findings', 'list', '--open', '--kind', 'balance_proof_failed', '--json'],
      env,
    );
    expect(JSON.parse(open.stdout)).toEqual([]);

    const ack = await runCli(['findings', 'ack', found[0]!.id, '--note', 'chain was not indexed yet'], env);
    expect(ack.code).toBe(0);
    expect(ack.stdout).toMatch(new RegExp(`finding ${found[0]!.id} .*acknowledged`));
    const { rows } = await pipeline.db.execute<{ ack_note: string }>(
      sql`select ack_note from findings where id = ${found[0]!.id}::bigint and acked_at is not null`,
    );
    expect(rows).toEqual([{ ack_note: 'chain was not indexed yet' }]);

    const missing = await runCli(['findings', 'ack', '999999999', '--note', 'x'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/finding 999999999 does not exist/);
    const badKind = await runCli(['findings', 'list', '--kind', 'Drop Table'], env);
    expect(badKind.code).toBe(1);
    expect(badKind.stderr).toMatch(/--kind: "Drop Table" is not a finding kind/);
  });
});
