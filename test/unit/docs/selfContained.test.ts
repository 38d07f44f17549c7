import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The repository stands alone: the rules a maintainer needs are in docs/ (accounting.md,
 * architecture.md, decisions.md), and nothing in code, tests, docs or output sends a reader to a
 * design file outside it. And docs/architecture.md's table of posting rules names functions that
 * exist, in the files it names, so it cannot silently go stale after a move or a rename.
 */
const ROOT = join(import.meta.dirname, '../../..');
const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f !== '' && existsSync(join(ROOT, f)) && !/\.(png|jpg|ico|woff2?)$/.test(f));

describe('the repository is self-contained', () => {
  it('behavior: no tracked file points at a design file outside the repository', () => {
    // Spelt in two parts so that this file does not find itself.
    const outside = [`DESIGN${'.md'}`, `../${'shared'}/`];
    const hits = tracked.flatMap((file) => {
      const text = readFileSync(join(ROOT, file), 'utf8');
      return outside.filter((needle) => text.includes(needle)).map((needle) => `${file}: ${needle}`);
    });
    expect(hits).toEqual([]);
  });

  it('behavior: docs/accounting.md has the sections the code points at, rules 1 to 10 included', () => {
    const text = readFileSync(join(ROOT, 'docs/accounting.md'), 'utf8');
    for (const heading of [
      '## Money',
      '## Ledger tables',
      '## Chart of accounts',
      '## Posting rules',
      '## Balance proof',
      '## Payments, payouts and the chain',
      '## Findings',
    ])
      expect(text).toContain(`\n${heading}\n`);
    for (let rule = 1; rule <= 10; rule++) expect(text).toMatch(new RegExp(`\\n### Rule ${rule}: `));
  });
});

describe("docs/architecture.md's posting-rule table", () => {
  const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const table = text.slice(text.indexOf('## Posting rules: where each is booked'));
  const rows = table
    .split('\n')
    .filter((line) => /^\| \d+ /.test(line))
    .map((line) => line.split('|').map((cell) => cell.trim()));

  it('behavior: has one row per rule, 1 to 10', () => {
    expect(rows.map((r) => Number.parseInt(r[1] ?? '', 10))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('behavior: every function it names is defined in the file named beside it', () => {
    const problems: string[] = [];
    for (const row of rows) {
      for (const cell of row.slice(2, 4)) {
        // Names in backticks belong to the next "(file)" after them; a bare file name is under
        // src/ledger/rules; names with no file after them may be anywhere in src/.
        let pending: string[] = [];
        const check = (names: string[], file: string | undefined) => {
          const candidates = file ? [file] : tracked.filter((f) => f.startsWith('src/') && f.endsWith('.ts'));
          for (const name of names) {
            const defined = candidates.some(
              (f) =>
                existsSync(join(ROOT, f)) &&
                new RegExp(`function ${name}\\b`).test(readFileSync(join(ROOT, f), 'utf8')),
            );
            if (!defined) problems.push(`rule ${row[1]}: ${name} is not defined in ${file ?? 'src/'}`);
          }
        };
        for (const m of cell.matchAll(/`(\w+)`|\(([\w/.]+\.ts)\)/g)) {
          if (m[1]) pending.push(m[1]);
          else if (m[2]) {
            check(pending, m[2].includes('/') ? m[2] : `src/ledger/rules/${m[2]}`);
            pending = [];
          }
        }
        check(pending, undefined);
      }
    }
    expect(problems).toEqual([]);
    expect(rows.flatMap((r) => [...(r[3] ?? '').matchAll(/`(\w+)`/g)]).length).toBeGreaterThanOrEqual(9);
  });
});
