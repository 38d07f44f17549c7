import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/runCli.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

// The real binary against a real, migrated database, as the daemon's role: `rates import` must
// work with the runtime grants (append-only) and write all of a file or none of it.
const { db, url } = await createMigratedDatabase('rates_import');
const dir = mkdtempSync(join(tmpdir(), 'rates-import-'));

function csv(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, body);
  return path;
}

async function held(): Promise<string[]> {
  const rows = await db.execute<{ row: string }>(sql`
    select rate_date::text || ',' || asset || ',' || currency || ',' || rate::text || ',' || source as row
      from rates order by rate_date, asset, currency`);
  return rows.rows.map((r) => r.row);
}

const GOOD =
  'date,asset,currency,rate\n2026-11-02,USDT,EUR,0.9234\n2026-11-02,USDC,EUR,0.92350\n\n2026-11-03,USDT,EUR,0.93\n';

describe('stablebooks rates import', () => {
  it('behavior: imports every row exactly, and importing the same file again changes nothing', async () => {
    const file = csv('good.csv', GOOD);
    const first = await runCli(['rates', 'import', file, '--json'], { DATABASE_URL: url });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ added: 3, unchanged: 0 });
    const after = await held();
    expect(after).toEqual([
      '2026-11-02,USDC,EUR,0.9235,import',
      '2026-11-02,USDT,EUR,0.9234,import',
      '2026-11-03,USDT,EUR,0.93,import',
    ]);

    const again = await runCli(['rates', 'import', file], { DATABASE_URL: url });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('0 rates imported, 3 already there unchanged');
    expect(await held()).toEqual(after);
  });

  it('behavior: a bad row refuses the whole file with its line number on one line, exit non-zero, nothing written', async () => {
    const before = await held();
    const file = csv(
      'bad.csv',
      'date,asset,currency,rate\n2026-11-04,USDT,EUR,0.94\n2026-11-04,USDC,EUR,0.94\n2026-11-05,USDT,EUR,9.4e-1\n',
    );
    const run = await runCli(['rates', 'import', file], { DATABASE_URL: url });
    expect(run.code).not.toBe(0);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('line 4');
    expect(run.stderr).toContain('nothing was imported');
    expect(await held()).toEqual(before);

    for (const [body, line] of [
      ['date,asset,currency,rate\n2026-02-30,USDT,EUR,1\n', 'line 2'],
      ['date,asset,currency,rate\n2026-11-06,DAI,EUR,1\n', 'line 2'],
      ['date,asset,currency,rate\n2026-11-06,USDT,eur,1\n', 'line 2'],
      ['date,asset,currency,rate\n2026-11-06,USDT,EUR,0\n', 'line 2'],
      ['date,asset,currency,rate\n2026-11-06,USDT,EUR,1\n2026-11-06,USDT,EUR,2\n', 'line 3'],
      ['day,asset,currency,rate\n2026-11-06,USDT,EUR,1\n', 'line 1'],
    ] as const) {
      const r = await runCli(['rates', 'import', csv('each.csv', body)], { DATABASE_URL: url });
      expect(r.code, body).not.toBe(0);
      expect(r.stderr, body).toContain(line);
    }
    expect(await held()).toEqual(before);
  });

  it('behavior: a row that contradicts a rate already imported refuses the file (its line named), and the good rows before it are not written', async () => {
    const before = await held();
    const file = csv(
      'conflict.csv',
      'date,asset,currency,rate\n2026-11-07,USDT,EUR,0.95\n2026-11-02,USDT,EUR,0.9\n',
    );
    const run = await runCli(['rates', 'import', file], { DATABASE_URL: url });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('line 3');
    expect(run.stderr).toContain('0.9234');
    expect(await held()).toEqual(before);
  });
});
