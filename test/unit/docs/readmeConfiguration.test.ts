import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envFields } from '../../../src/config/env.ts';

/**
 * README.md's Configuration table is true to src/config/env.ts: one row per variable of the
 * schema, and its default column says what the schema does without the variable: `value` (the
 * schema's default), required, or unset.
 */
const readme = readFileSync(join(import.meta.dirname, '../../../README.md'), 'utf8');
const section = readme.slice(
  readme.indexOf('\n## Configuration\n'),
  readme.indexOf('\n## Running in production\n'),
);
const rows = section
  .split('\n')
  .filter((line) => line.startsWith('| ') && !/^\| -+ \|/.test(line))
  .slice(1) // the header
  .map((line) => line.split(' | ').map((cell) => cell.replace(/^\|? ?|\s*\|?$/g, '').trim()));
type Field = { safeParse(v: unknown): { success: boolean; data?: unknown } };
const fields = envFields as Record<string, Field>;
const schemaNames = Object.keys(envFields);

describe("README.md's Configuration table", () => {
  it('behavior: one row per variable of the schema, and no row for a variable it does not read', () => {
    const named = rows.map((r) => /^`([A-Z][A-Z0-9_]*)`$/.exec(r[0] ?? '')?.[1]);
    expect(schemaNames.filter((n) => named.filter((m) => m === n).length !== 1)).toEqual([]);
    const others = rows.filter((_, i) => named[i] === undefined || !(named[i] in envFields)).map((r) => r[0]);
    expect(others).toEqual([
      "the variable each store's `api_secret_env` names, e.g. `SVC_SECRET_ST_A`",
      '`RPC_URL_<chain id>`',
    ]);
  });

  it("behavior: each default is the schema's; a variable without one says required or unset", () => {
    const said: Record<string, string> = {};
    const truth: Record<string, string> = {};
    for (const [cell, defaultCell = ''] of rows) {
      const name = /^`([A-Z][A-Z0-9_]*)`$/.exec(cell ?? '')?.[1];
      const field = name === undefined ? undefined : fields[name];
      if (name === undefined || field === undefined) continue;
      const byDefault = field.safeParse(undefined);
      truth[name] = !byDefault.success
        ? 'required'
        : byDefault.data === undefined
          ? 'unset'
          : `default ${JSON.stringify(byDefault.data)}`;
      const stated = /^`([^`]*)`$/.exec(defaultCell)?.[1];
      const parsed = stated === undefined ? undefined : field.safeParse(stated);
      said[name] = parsed?.success
        ? `default ${JSON.stringify(parsed.data)}`
        : (/^(required|unset)\b/.exec(defaultCell)?.[1] ?? defaultCell);
    }
    expect(said).toEqual(truth);
  });
});
