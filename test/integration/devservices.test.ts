import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { createTestDatabase } from '../helpers/testDatabase.ts';

describe('ephemeral services', () => {
  it('behavior: each test file gets a database of its own on the real server', async () => {
    const url = await createTestDatabase('devservices');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ db: string; v: string }>(
      'select current_database() as db, current_setting($1) as v',
      ['server_version_num'],
    );
    await client.end();
    expect(rows[0]?.db).toMatch(/^sb_devservices_[0-9a-f]{8}$/);
    expect(Number(rows[0]?.v)).toBeGreaterThanOrEqual(150000);
  });

  it('behavior: anvil answers JSON-RPC', async () => {
    const res = await fetch(inject('rpcUrl'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    });
    expect(((await res.json()) as { result: string }).result).toMatch(/^0x[0-9a-f]+$/);
  });

  it('behavior: a process that exits without stopping its PostgreSQL (Ctrl-C) takes the server and its folder with it', async () => {
    const script = new URL('../fixtures/exitWithoutStop.ts', import.meta.url).pathname;
    const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', script]).then(
      () => ({ code: 0, stdout: '' }),
      (err: { code?: number; stdout?: string }) => ({ code: err.code, stdout: err.stdout ?? '' }),
    );
    expect(run.code).toBe(130);
    const printed = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as {
      url?: string;
      dataDirectory?: string;
    };
    expect(printed.dataDirectory).toMatch(/stablebooks-pg-/);
    expect(existsSync(dirname(printed.dataDirectory ?? ''))).toBe(false);
    const client = new pg.Client({ connectionString: printed.url, connectionTimeoutMillis: 2000 });
    await expect(client.connect()).rejects.toThrow();
  }, 60_000);
});
