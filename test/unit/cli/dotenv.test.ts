import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/runCli.ts';

/**
 * The CLI reads ./.env (or --dotenv <path>) before any command parses its configuration; a
 * variable set in the environment wins over the file. `migrate` with a DATABASE_URL of the wrong
 * scheme is the probe: its one line says which scheme it got, so which value was taken, and it
 * needs no database.
 */
function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-dotenv-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}
const schemeLine = (scheme: string) =>
  `stablebooks: DATABASE_URL: must be a postgres:// URL (got a URL with scheme ${scheme}:)\n`;

describe('stablebooks reads .env', () => {
  const dir = dirWith({
    '.env': '# a comment\nDATABASE_URL="mysql://from-dotenv/db"\n',
    'other.env': "DATABASE_URL='http://from-other/db'\n",
  });

  it('behavior: ./.env of the working directory is read when present', async () => {
    const run = await runCli(['migrate'], {}, { cwd: dir, dotenv: true });
    expect(run).toEqual({ code: 2, stdout: '', stderr: schemeLine('mysql') });
  });

  it('behavior: a variable set in the environment wins over .env, even set empty', async () => {
    const exported = await runCli(
      ['migrate'],
      { DATABASE_URL: 'redis://from-env/0' },
      { cwd: dir, dotenv: true },
    );
    expect(exported.stderr).toBe(schemeLine('redis'));
    const empty = await runCli(['migrate'], { DATABASE_URL: '' }, { cwd: dir, dotenv: true });
    expect(empty.stderr).toBe('stablebooks: DATABASE_URL: is required but not set\n');
  });

  it('behavior: --dotenv <path> reads that file instead, before or after the command; --no-dotenv none', async () => {
    const before = await runCli(['--dotenv', 'other.env', 'migrate'], {}, { cwd: dir, dotenv: true });
    expect(before.stderr).toBe(schemeLine('http'));
    const after = await runCli(['migrate', '--dotenv', join(dir, 'other.env')], {}, { dotenv: true });
    expect(after.stderr).toBe(schemeLine('http'));
    const none = await runCli(['migrate', '--no-dotenv'], {}, { cwd: dir, dotenv: true });
    expect(none.stderr).toBe('stablebooks: DATABASE_URL: is required but not set\n');
  });

  it('error: a --dotenv file that does not exist is one line, exit 2, and nothing runs', async () => {
    const run = await runCli(['--dotenv', 'missing.env', 'migrate'], {}, { cwd: dir, dotenv: true });
    expect(run).toEqual({
      code: 2,
      stdout: '',
      stderr: 'stablebooks: --dotenv: missing.env: no such file\n',
    });
  });

  it('behavior: without a .env nothing is read and nothing is said about it', async () => {
    const run = await runCli(['migrate'], {}, { cwd: dirWith({}), dotenv: true });
    expect(run.stderr).toBe('stablebooks: DATABASE_URL: is required but not set\n');
  });
});
