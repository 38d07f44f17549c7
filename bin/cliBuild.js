// The compiled CLI: the command's TypeScript bundled by esbuild into dist/cli, which
// bin/stablebooks.js runs only while every file it was compiled from is unchanged; otherwise it
// runs the sources through tsx. See docs/decisions.md, "CLI start-up (issue 33)".
//
// Plain JavaScript: it runs before anything can compile TypeScript.
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Two folders below the root, as every module of src/<part>/ is: a module that finds a file of
 * the repository with `new URL('../../migrations', import.meta.url)` finds the same one compiled.
 */
export const BUILD_DIR = join(ROOT, 'dist', 'cli');

/** [path from the root, mtimeMs, size] of every file the build was made from. */
const MANIFEST = 'build.json';
/** Folders the CLI's modules come from; the build fails if esbuild reads a module elsewhere. */
const SOURCE_DIRS = ['src', 'jobs'];
/** Besides the modules: what decides how they are compiled. */
const BUILD_FILES = ['tsconfig.json', 'bin/cliBuild.js'];
/**
 * npm packages compiled into the build rather than imported from node_modules: ES modules with
 * no dependencies and no files of their own read at run time, whose hundreds of small modules
 * cost more to load one by one than the code itself (zod alone was about a third of `ledger
 * balances`' start-up). Every other package stays an import: CommonJS ones, native ones, and
 * those that read their own files (bullmq's Lua scripts, pino's transports).
 */
const BUNDLED_PACKAGES = new Set(['zod', 'drizzle-orm']);

/**
 * The compiled entry module when the build in `dir` is fresh: every file it was made from has the
 * mtime and size it had then. Otherwise (no build, a file changed, moved or deleted) null, and
 * the caller runs the sources: a stale build is never run.
 * @param {string} [dir]
 * @returns {string | null}
 */
export function freshBuild(dir = BUILD_DIR) {
  /** @type {{ inputs: Array<[string, number, number]> }} */
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8'));
  } catch {
    return null;
  }
  for (const [path, mtimeMs, size] of manifest.inputs) {
    const now = statSync(join(ROOT, path), { throwIfNoEntry: false });
    if (now?.mtimeMs !== mtimeMs || now.size !== size) return null;
  }
  return join(dir, 'main.js');
}

/**
 * Compiles src/cli/main.ts and everything it imports, at once or on demand, into `dir`: one
 * bundle with a chunk per dynamic import (splitting), so a command loads only its own modules;
 * npm packages stay imports of node_modules but for BUNDLED_PACKAGES. The files are stat'ed before esbuild reads them and
 * the manifest records those readings, so a file changed during the build makes it stale. The
 * new build replaces the old one by renaming folders: a process starting meanwhile finds none
 * and runs the sources. Returns esbuild's metafile (what each output imports).
 * @param {string} [dir]
 * @returns {Promise<import('esbuild').Metafile>}
 */
export async function buildCli(dir = BUILD_DIR) {
  const { build } = await import('esbuild');
  const before = new Map(
    [...SOURCE_DIRS.flatMap((d) => filesUnder(d)), ...BUILD_FILES].map((path) => [path, statOf(path)]),
  );
  const next = `${dir}.next-${process.pid}`;
  rmSync(next, { recursive: true, force: true });
  const { metafile } = await build({
    absWorkingDir: ROOT,
    entryPoints: ['src/cli/main.ts'],
    outdir: next,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    plugins: [
      {
        name: 'packages-from-node-modules',
        setup(b) {
          // A bare specifier (a package or node:) stays an import, unless of a bundled package.
          b.onResolve({ filter: /^[^./]/ }, (args) =>
            BUNDLED_PACKAGES.has(packageName(args.path)) ? undefined : { path: args.path, external: true },
          );
        },
      },
    ],
    // For stack traces that name the TypeScript lines: `start` turns source maps on (the daemon
    // logs stacks; reading the maps costs every command start-up time, so only there).
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
  // A compiled-in package is listed by its package.json, which every install of it rewrites: one
  // file to check instead of its hundreds. It does not change during a build: read now.
  const modules = Object.keys(metafile.inputs).map((path) =>
    path.startsWith('node_modules/')
      ? `node_modules/${packageName(path.slice('node_modules/'.length))}/package.json`
      : path,
  );
  /** @type {Array<[string, number, number]>} */
  const inputs = [...new Set([...modules, ...BUILD_FILES])].map((path) => {
    const seen = path.startsWith('node_modules/') ? statOf(path) : before.get(path);
    if (!seen) throw new Error(`build: ${path} is not under ${SOURCE_DIRS.join(' or ')}; add its folder`);
    return [path, seen[0], seen[1]];
  });
  writeFileSync(join(next, MANIFEST), JSON.stringify({ inputs }));
  replace(dir, next);
  return metafile;
}

/**
 * Puts the folder `next` in place of `dir`. Two builds at once each put theirs; whichever is in
 * place was made from the same files.
 * @param {string} dir
 * @param {string} next
 */
function replace(dir, next) {
  const old = `${dir}.old-${process.pid}`;
  try {
    renameSync(dir, old);
  } catch (err) {
    if (/** @type {NodeJS.ErrnoException} */ (err).code !== 'ENOENT') throw err;
  }
  try {
    renameSync(next, dir);
  } catch (err) {
    const code = /** @type {NodeJS.ErrnoException} */ (err).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    rmSync(next, { recursive: true, force: true });
  }
  rmSync(old, { recursive: true, force: true });
}

/**
 * [mtimeMs, size] of a file of the root.
 * @param {string} path
 * @returns {[number, number]}
 */
function statOf(path) {
  const s = statSync(join(ROOT, path));
  return [s.mtimeMs, s.size];
}

/**
 * The package a bare specifier names: `drizzle-orm` of `drizzle-orm/pg-core`, `@a/b` of `@a/b/c`.
 * @param {string} specifier
 */
function packageName(specifier) {
  return specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
}

/**
 * Every file under a folder of the root, as a path from the root (as esbuild names its inputs).
 * @param {string} dir
 * @returns {string[]}
 */
function filesUnder(dir) {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(ROOT.length));
}
