import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * README.md's alert table ("Operations: alerts and what to do") is true to grafana/alerts.rules.yml:
 * one row per alert, nothing more; its severity and `for` are the rule's; and the figures its
 * "fires when" cell gives (26 hours, 50 blocks, 10%) are the rule's: each one is a number, range
 * or `for` of the rule, and the rule's threshold (the number of its last comparison) is among them.
 *
 */
const ROOT = join(import.meta.dirname, '../../..');

interface Rule {
  alert: string;
  expr: string;
  for: string | undefined;
  severity: string | undefined;
}

/** The alerting rules of a rules file, in order, read by a real YAML parser. */
function readRules(text: string): Rule[] {
  const doc = parse(text) as {
    groups: Array<{
      rules: Array<{ alert?: string; expr: string; for?: string; labels?: { severity?: string } }>;
    }>;
  };
  return doc.groups.flatMap((g) =>
    g.rules
      .filter((r) => r.alert !== undefined)
      .map((r) => ({
        alert: r.alert!,
        expr: String(r.expr).replace(/\s+/g, ' ').trim(),
        for: r.for,
        severity: r.labels?.severity,
      })),
  );
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** A Prometheus duration (`10m`, `26h`, `1h30m`) in seconds. */
function durationSeconds(text: string): number {
  const parts = [...text.matchAll(/(\d+)([smhd])/g)];
  if (parts.map((p) => p[0]).join('') !== text) throw new Error(`not a duration: ${text}`);
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * UNIT_SECONDS[unit!]!, 0);
}

/** An expression without its label matchers and strings (which hold digits that are not figures). */
function bare(expr: string): string {
  return expr.replace(/\{[^}]*\}/g, '').replace(/"(?:[^"\\]|\\.)*"/g, '""');
}

/** `26 * 3600` as 93600: the products of two literal numbers, evaluated. */
function products(expr: string): string {
  return expr.replace(/(?<![\w.])(\d+(?:\.\d+)?)\s*\*\s*(\d+(?:\.\d+)?)(?![\w.])/g, (_, a, b) =>
    String(Number(a) * Number(b)),
  );
}

/** Every figure of a rule: the numbers of its expression, its ranges and its `for`, in seconds. */
function ruleFigures(rule: Rule): Set<number> {
  const expr = products(bare(rule.expr));
  const figures = new Set<number>();
  for (const [, range] of expr.matchAll(/\[(\w+)\]/g)) figures.add(durationSeconds(range!));
  const withoutRanges = expr.replace(/\[\w+\]/g, '');
  for (const [n] of withoutRanges.matchAll(/(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])/g)) figures.add(Number(n));
  if (rule.for) figures.add(durationSeconds(rule.for));
  return figures;
}

/** The threshold of a rule: the number its last comparison compares with. */
function threshold(rule: Rule): number {
  const comparisons = [
    ...products(bare(rule.expr)).matchAll(/(?:==|!=|>=|<=|>|<)\s*(-?\d+(?:\.\d+)?)(?![\w.])/g),
  ];
  const last = comparisons.at(-1);
  if (!last) throw new Error(`${rule.alert}: no comparison with a number in ${rule.expr}`);
  return Number(last[1]);
}

const WORD_SECONDS: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86_400 };

/**
 * The figures a README cell gives: `26 hours` as 93600 (seconds), `10%` as 0.1, a plain number as
 * itself. Digits inside a word or a name (`5xx`, `eth_call2`) are not figures.
 */
function cellFigures(cell: string): number[] {
  const out: number[] = [];
  const re = /(?<![\w.-])(-?\d+(?:\.\d+)?)(?:(%)|\s+(second|minute|hour|day)s?\b)?(?![\w%])/g;
  for (const [, n, percent, unit] of cell.matchAll(re)) {
    if (percent) out.push(Number(n) / 100);
    else if (unit) out.push(Number(n) * WORD_SECONDS[unit]!);
    else out.push(Number(n));
  }
  return out;
}

interface Row {
  alert: string;
  severity: string;
  firesWhen: string;
  for: string;
}

/** The rows of the alert table of README's "Operations: alerts and what to do" section. */
function readmeRows(readme: string): Row[] {
  const start = readme.indexOf('\n## Operations: alerts and what to do\n');
  expect(start, 'the section "Operations: alerts and what to do" in README.md').toBeGreaterThan(0);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const table = section.split('\n').filter((l) => l.startsWith('|'));
  const header = table[0]?.split('|').map((c) => c.trim());
  expect(header).toEqual(['', 'alert', 'severity', 'fires when', 'for', 'what to do', '']);
  return table.slice(2).map((line) => {
    const cells = line.split('|').map((c) => c.trim());
    expect(cells.length, line).toBe(7);
    return { alert: cells[1]!, severity: cells[2]!, firesWhen: cells[3]!, for: cells[4]! };
  });
}

const rules = readRules(readFileSync(join(ROOT, 'grafana/alerts.rules.yml'), 'utf8'));
const rows = readmeRows(readFileSync(join(ROOT, 'README.md'), 'utf8'));

describe("README's alert table and grafana/alerts.rules.yml", () => {
  it('behavior: every rule is read, each each with an expression and a severity', () => {
    const text = readFileSync(join(ROOT, 'grafana/alerts.rules.yml'), 'utf8');
    expect(rules.length).toBe(text.match(/^\s*- alert: /gm)?.length);
    expect(rules.length).toBeGreaterThanOrEqual(14);
    for (const r of rules) {
      expect(r.expr, r.alert).not.toBe('');
      expect(r.severity, r.alert).toMatch(/^(warning|critical)$/);
    }
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
  });

  it('behavior: the figures of a cell and of a rule are read in the same units', () => {
    expect(
      cellFigures('more than 26 hours ago, over 5 minutes, more than 10%, 5xx, `up` is 0, not -1'),
    ).toEqual([93_600, 300, 0.1, 0, -1]);
    const rule = {
      alert: 'X',
      expr: 'time() - (max(a{b="1"}[5m]) > 0) > 26 * 3600',
      for: '10m',
      severity: 'x',
    };
    expect([...ruleFigures(rule)].sort((a, b) => a - b)).toEqual([0, 300, 600, 93_600]);
    expect(threshold(rule)).toBe(93_600);
  });

  it('invariant: one row per alert, in the order of the rules file', () => {
    expect(rows.map((r) => r.alert)).toEqual(rules.map((r) => r.alert));
  });

  it("invariant: each row's severity and for are the rule's", () => {
    for (const rule of rules) {
      const row = rows.find((r) => r.alert === rule.alert);
      expect({ severity: row?.severity, for: row?.for }, rule.alert).toEqual({
        severity: rule.severity,
        for: rule.for ?? '—',
      });
    }
  });

  it("invariant: the figures a row gives are the rule's, its threshold included", () => {
    for (const rule of rules) {
      const row = rows.find((r) => r.alert === rule.alert);
      const given = cellFigures(row?.firesWhen ?? '');
      const figures = ruleFigures(rule);
      expect(
        given.filter((n) => !figures.has(n)),
        `${rule.alert}: figures in README that the rule does not have (${[...figures].join(', ')})`,
      ).toEqual([]);
      expect(given, `${rule.alert}: README states the threshold`).toContain(threshold(rule));
    }
  });
});
