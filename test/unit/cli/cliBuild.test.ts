import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, freshBuild } from '../../../bin/cliBuild.js';

/**
 * The compiled CLI that bin/stablebooks.js runs while it is fresh. Each test file builds its own,
 * in a folder beside dist/cli (two folders below the root, as that one is), and removes it.
 */
const ROOT = join(import.meta.dirname, '../../..');
const DIR = join(ROOT, 'dist', `test-${process.pid}`);
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

type Input = [string, number, number];
let metafile: Metafile;

beforeAll(async () => {
  metafile = await buildCli(DIR);
}, 60_000);
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

describe('the compiled CLI (bin/cliBuild.js)', () => {
  it("behavior: a new build is fresh and runs: --version prints package.json's version", () => {
    const entry = freshBuild(DIR);
    expect(entry).toBe(join(DIR, 'main.js'));
    // What bin/stablebooks.js does with it; package.json is found from the compiled module.
    const script = `const { main } = await import(${JSON.stringify(pathToFileURL(entry ?? '').href)});
      await main(['node', 'stablebooks', '--version']);`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect({ status: run.status, stdout: run.stdout, stderr: run.stderr }).toEqual({
      status: 0,
      stdout: `${version}\n`,
      stderr: '',
    });
  });

  it('behavior: stale once a file it was made from changed (mtime or size) or is gone; stale without a build', () => {
    const path = join(DIR, 'build.json');
    const original = readFileSync(path, 'utf8');
    const { inputs } = JSON.parse(original) as { inputs: Input[] };
    const changes: Array<(i: Input) => Input> = [
      ([p, mtime, size]) => [p, mtime + 1, size],
      ([p, mtime, size]) => [p, mtime, size + 1],
      ([, mtime, size]) => ['src/cli/noSuchModule.ts', mtime, size],
    ];
    try {
      for (const change of changes) {
        writeFileSync(path, JSON.stringify({ inputs: inputs.map((i, n) => (n === 0 ? change(i) : i)) }));
        expect(freshBuild(DIR)).toBeNull();
      }
    } finally {
      writeFileSync(path, original);
    }
    expect(freshBuild(DIR)).not.toBeNull();
    expect(freshBuild(join(ROOT, 'dist', 'no-such-build'))).toBeNull();
  });

  it('invariant: the manifest lists every module the CLI may run, tsconfig.json and the build itself', () => {
    const { inputs } = JSON.parse(readFileSync(join(DIR, 'build.json'), 'utf8')) as { inputs: Input[] };
    const listed = inputs.map(([p]) => p);
    const modules = Object.keys(metafile.inputs).filter((p) => !p.startsWith('node_modules/'));
    expect(listed).toEqual(expect.arrayContaining([...modules, 'tsconfig.json', 'bin/cliBuild.js']));
    // Modules only a command's action imports are in it too: the daemon's, the jobs'; and the
    // packages compiled in, by their package.json, so that installing another version makes it stale.
    expect(listed).toEqual(
      expect.arrayContaining([
        'src/daemon/startDaemon.ts',
        'jobs/queues.ts',
        'node_modules/zod/package.json',
        'node_modules/drizzle-orm/package.json',
      ]),
    );
    expect(listed.filter((p) => p.startsWith('node_modules/'))).toHaveLength(2);
  });

  it("invariant: --help and --version load commander and the CLI's own modules only; each command imports the rest when it runs", () => {
    const outputs = metafile.outputs;
    const entry = Object.keys(outputs).find((o) => outputs[o]?.entryPoint === 'src/cli/main.ts');
    expect(entry).toBeDefined();
    // Everything main.js loads before it runs: its static imports, and theirs.
    const loaded = new Set<string>();
    const packages = new Set<string>();
    const walk = (output: string) => {
      if (loaded.has(output)) return;
      loaded.add(output);
      for (const i of outputs[output]?.imports ?? []) {
        if (i.kind !== 'import-statement') continue;
        if (i.external) packages.add(i.path);
        else walk(i.path);
      }
    };
    walk(entry ?? '');
    expect([...packages].filter((p) => !p.startsWith('node:'))).toEqual(['commander']);
    // Nor any code of a package compiled into the build (zod, drizzle-orm).
    const compiledIn = [...loaded].flatMap((o) => Object.keys(outputs[o]?.inputs ?? {}));
    expect(compiledIn.filter((i) => i.startsWith('node_modules/'))).toEqual([]);
    expect(compiledIn).toContain('src/cli/main.ts');
  });
});
