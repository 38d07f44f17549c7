import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { describe, expect, it } from 'vitest';
import { envFields } from '../../../src/config/env.ts';

/**
 * .env.example is what an operator copies to .env: it must name every variable the schema reads
 * (and nothing it does not), state each default as the schema has it, and read the same whether
 * the CLI loads it (Node.js's .env parser) or a shell sources it.
 */
const ROOT = join(import.meta.dirname, '../../..');
const EXAMPLE = join(ROOT, '.env.example');
const text = readFileSync(EXAMPLE, 'utf8');
const schemaNames = Object.keys(envFields).sort();
type Field = { safeParse(v: unknown): { success: boolean; data?: unknown } };
const field = (name: string) => (envFields as Record<string, Field>)[name] as Field;

/** `NAME=` lines, and `# NAME=` lines (a documented variable left unset). */
const assigned = [...text.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] as string);
const commented = [...text.matchAll(/^# ([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] as string);
/** Variables outside the schema by design: per chain, and per store (the name STORES_FILE gives). */
const patterned = (name: string) => /^RPC_URL_\d+$/.test(name) || /^SVC_SECRET_[A-Z0-9_]+$/.test(name);

describe('.env.example', () => {
  it('behavior: names every variable of the schema, and only those (plus RPC_URL_<id> and SVC_SECRET_*)', () => {
    const documented = new Set([...assigned, ...commented]);
    expect(schemaNames.filter((n) => !documented.has(n))).toEqual([]);
    expect([...documented].filter((n) => !(n in envFields) && !patterned(n))).toEqual([]);
    expect(assigned.length).toBe(new Set(assigned).size);
  });

  it('behavior: a value given for a variable with a default is that default', () => {
    const values = parseEnv(text);
    const stated: Record<string, unknown> = {};
    const defaults: Record<string, unknown> = {};
    for (const name of schemaNames) {
      const byDefault = field(name).safeParse(undefined);
      const value = values[name];
      if (!byDefault.success || byDefault.data === undefined || value === undefined) continue;
      const parsed = field(name).safeParse(value);
      stated[name] = parsed.success ? parsed.data : `${JSON.stringify(value)} does not parse`;
      defaults[name] = byDefault.data;
    }
    expect(stated).toEqual(defaults);
    // Every variable with a default states it, so the file is the place to read them.
    expect(Object.keys(stated)).toEqual(
      schemaNames.filter((n) => {
        const d = field(n).safeParse(undefined);
        return d.success && d.data !== undefined;
      }),
    );
  });

  it('behavior: a shell that sources it gets exactly the values Node.js reads from it', () => {
    // Run where * would match files, as it would in a real directory; a clean environment, and
    // no `set -u`. An unquoted cron ran `1` as a command and left RECON_CRON unset.
    const dir = mkdtempSync(join(tmpdir(), 'sb-env-example-'));
    writeFileSync(join(dir, 'a-file'), '');
    const shell = spawnSync(
      'bash',
      ['--noprofile', '--norc', '-c', 'set -a; source "$1"; env -0', 'bash', EXAMPLE],
      {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        encoding: 'utf8',
      },
    );
    expect(shell.stderr).toBe('');
    expect(shell.status).toBe(0);
    const exported = new Map(
      shell.stdout
        .split('\0')
        .filter(Boolean)
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)] as const),
    );
    const fromShell = Object.fromEntries(assigned.map((n) => [n, exported.get(n) ?? '<unset>']));
    expect(fromShell).toEqual(parseEnv(text));
    expect(fromShell.RECON_CRON).toBe('0 1 * * *');
    expect(fromShell.DATABASE_URL).toBe('postgres://stablebooks:stablebooks@127.0.0.1:5432/stablebooks');
    expect(fromShell.ENCRYPTION_KEY).toBe('');
  });
});
