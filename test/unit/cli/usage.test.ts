import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.ts';
import { runCli } from '../../helpers/runCli.ts';

/**
 * The command line's own answers, no service needed: --version, and one style for every error.
 * commander's errors (unknown option or command, missing argument) used to print
 * "error: ..." and a hint on a second line, exit 1; the application's print "stablebooks: ...".
 */
const ROOT = join(import.meta.dirname, '../../..');
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

describe('stablebooks --version', () => {
  it("behavior: prints package.json's version and exits 0", async () => {
    const run = await runCli(['--version']);
    expect(run).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});

describe('stablebooks usage errors', () => {
  it('error: unknown option, unknown command, missing argument or option: one "stablebooks:" line, exit 2', async () => {
    for (const [args, message] of [
      [['migrate', '--bogus'], "unknown option '--bogus'"],
      [['frobnicate'], "unknown command 'frobnicate'"],
      [['intents', 'show'], "missing required argument 'id'"],
      [['findings', 'ack', '1'], "required option '--note <text>' not specified"],
      [['migrate', 'extra'], "too many arguments for 'migrate'"],
    ] as const) {
      const run = await runCli([...args]);
      expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code: 2, stdout: '' });
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^stablebooks: /);
      expect(lines[0]).toContain(message);
      expect(lines[0]).toMatch(/\(run with --help for usage\)$/);
    }
  });

  it('error: a bad variable is the same style: one line naming it, exit 2', async () => {
    const run = await runCli(['migrate'], { DATABASE_URL: 'nonsense' });
    expect(run).toEqual({
      code: 2,
      stdout: '',
      stderr: 'stablebooks: DATABASE_URL: must be a postgres:// URL (got something that is not a URL)\n',
    });
  });

  it('behavior: --help still prints the help on stdout and exits 0', async () => {
    const run = await runCli(['migrate', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: stablebooks migrate/);
    expect(run.stderr).toBe('');
  });
});

describe('stablebooks <command> --help', () => {
  it('behavior: every command and subcommand prints its usage and exits 0', async () => {
    const paths: string[][] = [];
    const walk = (command: Command, path: string[]) => {
      for (const sub of command.commands) {
        paths.push([...path, sub.name()]);
        walk(sub, [...path, sub.name()]);
      }
    };
    walk(buildProgram(), []);
    expect(paths.length).toBeGreaterThan(20);
    // A few at a time: under tsx (no fresh build) each one compiles the CLI's modules.
    const runs = [];
    for (let i = 0; i < paths.length; i += 4)
      runs.push(...(await Promise.all(paths.slice(i, i + 4).map((p) => runCli([...p, '--help'])))));
    for (const [i, run] of runs.entries()) {
      const command = paths[i]?.join(' ');
      expect({ command, code: run.code, stderr: run.stderr, usage: run.stdout.split('\n')[0] }).toEqual({
        command,
        code: 0,
        stderr: '',
        usage: expect.stringMatching(new RegExp(`^Usage: stablebooks ${command} `)),
      });
    }
  }, 120_000);
});
