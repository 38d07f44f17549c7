import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The Dockerfile cannot be built here (no Docker in tests or CI), so what it must say is checked
 * on its text: the base image, the install command that works for this lock file, a user that is
 * not root, a health check that really runs (it is run here against a local server), and a
 * .dockerignore that keeps secrets and local output out of the build context.
 */
const ROOT = join(import.meta.dirname, '../..');

type Instruction = { keyword: string; args: string };

/** The Dockerfile's instructions in order: comments dropped, `\` continuations joined. */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (pending !== '' && line.startsWith('#')) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    if (full === '') continue;
    const m = /^(\w+)\s+([\s\S]*)$/.exec(full);
    expect(m, `a Dockerfile instruction: ${full}`).not.toBeNull();
    out.push({ keyword: m![1]!.toUpperCase(), args: m![2]!.trim() });
  }
  expect(pending, 'the Dockerfile ends inside a continued line').toBe('');
  return out;
}

const dockerfile = instructions(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const all = (keyword: string) => dockerfile.filter((i) => i.keyword === keyword);
const indexOf = (keyword: string) => dockerfile.findIndex((i) => i.keyword === keyword);
const env = new Map(
  all('ENV').flatMap((i) =>
    [...i.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)].map((m) => [m[1]!, m[2]!.replace(/^"|"$/g, '')] as const),
  ),
);

/** The exec form (`["a", "b"]`) of an instruction's arguments, which must be valid JSON. */
function execForm(args: string): string[] {
  expect(args.startsWith('['), `exec form expected: ${args}`).toBe(true);
  const parsed = JSON.parse(args) as unknown;
  expect(Array.isArray(parsed) && parsed.every((a) => typeof a === 'string'), args).toBe(true);
  return parsed as string[];
}

/** The HEALTHCHECK's command as an argv, options (--interval=...) dropped. */
function healthcheckArgv(): string[] {
  const checks = all('HEALTHCHECK');
  expect(checks, 'one HEALTHCHECK').toHaveLength(1);
  const m = /^(?:--[\w-]+=\S+\s+)*CMD\s+([\s\S]+)$/.exec(checks[0]!.args);
  expect(m, `HEALTHCHECK [options] CMD [...]: ${checks[0]!.args}`).not.toBeNull();
  return execForm(m![1]!);
}

describe('Dockerfile', () => {
  it('invariant: the image is Node 22 on Debian bookworm (slim), one stage', () => {
    const froms = all('FROM');
    expect(froms).toHaveLength(1);
    expect(froms[0]!.args).toMatch(/^node:22-bookworm-slim(@sha256:[0-9a-f]{64})?$/);
  });

  it('invariant: dependencies install from the lock file as it is (npm install --no-save, never npm ci)', () => {
    const runs = all('RUN').map((i) => i.args);
    for (const run of runs) expect(run, 'npm ci refuses this lock file').not.toMatch(/\bnpm\s+ci\b/);
    const install = runs.find((r) => /\bnpm\s+install\b/.test(r));
    expect(install, 'a RUN npm install').toBeDefined();
    // The flags scripts/ensure-deps.sh uses, so that the image and a checkout install alike.
    for (const flag of ['--no-save', '--no-audit', '--no-fund', '--omit=dev'])
      expect(install).toContain(flag);
    // The lock file is copied before the install, so that the install uses it.
    const copyLock = dockerfile.findIndex((i) => i.keyword === 'COPY' && /package-lock\.json/.test(i.args));
    const installAt = dockerfile.findIndex((i) => i.keyword === 'RUN' && i.args === install);
    expect(copyLock).toBeGreaterThanOrEqual(0);
    expect(copyLock).toBeLessThan(installAt);
  });

  it('invariant: --omit=dev keeps everything the commands run: tsx and every package src/, jobs/, bin/ import', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    // bin/stablebooks.js runs the TypeScript sources through tsx when the compiled build is not
    // fresh: a runtime dependency.
    expect(pkg.dependencies.tsx).toBeDefined();
    const files = (dir: string): string[] =>
      readdirSync(join(ROOT, dir)).flatMap((name) => {
        const path = join(dir, name);
        if (statSync(join(ROOT, path)).isDirectory()) return files(path);
        return /\.(ts|js)$/.test(name) ? [path] : [];
      });
    const imported = new Set<string>();
    for (const file of ['src', 'jobs', 'bin'].flatMap(files)) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      // Value imports only: `import type` is erased before it runs.
      for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s+(?!type\s)[^'";]*?from\s+'([^']+)'/g))
        imported.add(m[1]!);
      for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) imported.add(m[1]!);
    }
    const packages = [...imported]
      .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
      .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!));
    expect(packages.length).toBeGreaterThan(5);
    for (const name of new Set(packages))
      expect(pkg.dependencies[name], `${name} in dependencies`).toBeDefined();
  });

  it('invariant: the image compiles the CLI after copying the sources, before switching user', () => {
    // bin/stablebooks.js runs the compiled build while it is fresh; the image's never changes.
    const build = dockerfile.findIndex((i) => i.keyword === 'RUN' && i.args === 'node scripts/build-cli.js');
    const copySources = dockerfile.findIndex((i) => i.keyword === 'COPY' && i.args === '. .');
    expect(build, 'RUN node scripts/build-cli.js').toBeGreaterThan(copySources);
    expect(copySources).toBeGreaterThanOrEqual(0);
    expect(build).toBeLessThan(indexOf('USER'));
  });

  it('invariant: it runs as a user that is not root, set before ENTRYPOINT and CMD', () => {
    const users = all('USER');
    expect(users.length, 'a USER instruction').toBeGreaterThan(0);
    const last = users.at(-1)!.args.split(':')[0]!;
    expect(['root', '0']).not.toContain(last);
    const userAt = dockerfile.lastIndexOf(users.at(-1)!);
    expect(indexOf('ENTRYPOINT')).toBeGreaterThan(userAt);
    if (indexOf('CMD') >= 0) expect(indexOf('CMD')).toBeGreaterThan(userAt);
    // The reports folder is the one place the daemon writes: it belongs to that user.
    const reports = env.get('REPORTS_DIR');
    expect(reports, 'ENV REPORTS_DIR').toMatch(/^\//);
    const chown = all('RUN').find((i) => i.args.includes(`chown ${last}:${last} ${reports}`));
    expect(chown, `RUN ... chown ${last}:${last} ${reports}`).toBeDefined();
  });

  it('invariant: the entrypoint is the stablebooks command with the small young generation', () => {
    expect(all('ENTRYPOINT')).toHaveLength(1);
    expect(execForm(all('ENTRYPOINT')[0]!.args)).toEqual([
      'node',
      '--max-semi-space-size=4',
      'bin/stablebooks.js',
    ]);
    expect(execForm(all('CMD').at(-1)?.args ?? '[]')).toEqual(['start']);
  });

  it('invariant: the HEALTHCHECK GETs /readyz on the operations port (OPS_PORT, default 8081)', () => {
    const argv = healthcheckArgv();
    expect(argv.slice(0, 2)).toEqual(['node', '-e']);
    expect(argv[2]).toContain('/readyz');
    expect(argv[2]).toContain('process.env.OPS_PORT');
    expect(env.get('OPS_PORT')).toBe('8081');
  });

  describe('the HEALTHCHECK command, run', () => {
    let status = 200;
    const paths: string[] = [];
    let server: Server;
    let port = 0;
    beforeAll(async () => {
      server = createServer((req, res) => {
        paths.push(req.url ?? '');
        res.writeHead(req.url === '/readyz' ? status : 404).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    /** Runs the check as the container would; the server runs in this process, so not spawnSync. */
    const run = (opsPort: number) =>
      new Promise<number | null>((resolve, reject) => {
        const [cmd, ...args] = healthcheckArgv();
        const child = spawn(cmd!, args, {
          env: { PATH: process.env.PATH, OPS_PORT: String(opsPort) },
          stdio: 'ignore',
          timeout: 15_000,
        });
        child.on('error', reject);
        child.on('exit', (code) => resolve(code));
      });

    it('behavior: exit 0 when /readyz answers 200, 1 when it answers 503 or nobody listens', async () => {
      status = 200;
      expect(await run(port)).toBe(0);
      expect(paths).toEqual(['/readyz']);
      status = 503;
      expect(await run(port)).toBe(1);
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const unused = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      expect(await run(unused)).toBe(1);
    });
  });
});

describe('.dockerignore', () => {
  const patterns = new Set(
    readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'))
      .map((l) => l.replace(/^\/|\/$/g, '')),
  );

  it('invariant: the build context leaves out secrets, dependencies, local output and test artefacts', () => {
    for (const entry of [
      '.env',
      '.env.*',
      'node_modules',
      'demo-output',
      'reports',
      '.git',
      'coverage',
      'test-artifacts',
    ])
      expect(patterns.has(entry), `.dockerignore: ${entry}`).toBe(true);
    // Nothing re-includes a real environment file.
    for (const p of patterns) if (p.startsWith('!')) expect(p).not.toMatch(/^!\.env(\.(?!example$).*)?$/);
  });
});
