import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/runCli.ts';
import { createTestDatabase } from '../helpers/testDatabase.ts';

describe('stablebooks CLI', () => {
  it('behavior: --help lists the commands and exits 0', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    for (const command of ['migrate', 'doctor', 'sandbox']) expect(run.stdout).toContain(command);
  });

  it('error: an unknown command exits non-zero with one line', async () => {
    const run = await runCli(['frobnicate']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/unknown command 'frobnicate'/);
  });

  it('error: migrate without DATABASE_URL names the variable', async () => {
    const run = await runCli(['migrate']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('DATABASE_URL: is required but not set');
    expect(run.stdout).toBe('');
  });

  it('error: migrate against an unreachable database is one line, no stack', async () => {
    const run = await runCli(['migrate'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^stablebooks: .*ECONNREFUSED/);
  });

  it('behavior: migrate is idempotent and speaks JSON', async () => {
    const url = await createTestDatabase('cli_migrate');
    const first = await runCli(['migrate', '--json'], { DATABASE_URL: url });
    const second = await runCli(['migrate', '--json'], { DATABASE_URL: url });
    expect(first.code).toBe(0);
    expect(second.code).toBe(0);
    const a = JSON.parse(first.stdout) as { applied: number; total: number };
    const b = JSON.parse(second.stdout) as { applied: number; total: number };
    expect(b).toEqual({ applied: 0, total: a.total });
  });
});
