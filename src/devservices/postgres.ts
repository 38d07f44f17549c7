import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type ManagedProcess, removeAtExit, startManagedProcess, waitUntilReady } from './childProcess.ts';
import { findBinary, postgresBinDirs } from './findBinary.ts';
import { freePort } from './freePort.ts';

export interface EphemeralPostgres {
  /** Superuser URL of the `postgres` database. */
  url: string;
  /** Stops the server (fast shutdown: clients are cut off) and keeps its data: an outage. */
  pause(): Promise<void>;
  /** Starts the paused server again on the same port and data. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

/** initdb refuses to run as root, so as root the server runs as the `postgres` (or `nobody`) user. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const passwd = readFileSync('/etc/passwd', 'utf8').split('\n');
  for (const name of ['postgres', 'nobody']) {
    const line = passwd.find((l) => l.startsWith(`${name}:`));
    const fields = line?.split(':');
    if (fields?.[2] && fields[3]) return { uid: Number(fields[2]), gid: Number(fields[3]) };
  }
  throw new Error('running as root and neither a postgres nor a nobody user exists to run PostgreSQL');
}

export interface EphemeralPostgresOptions {
  /**
   * Keep PostgreSQL's default fsync, synchronous_commit and full_page_writes (on), so commits
   * cost what they cost in production; for benchmarks. Default false: tuned for tests (no fsync).
   */
  durable?: boolean;
  /** Extra server settings (`-c name=value`), e.g. pg_stat_statements for a benchmark. */
  settings?: Record<string, string>;
}

/**
 * A throwaway PostgreSQL cluster in a temp folder on a free port, tuned for tests (no fsync)
 * unless `durable`: nothing persists, and stop() removes the folder.
 */
export async function startEphemeralPostgres(
  options: EphemeralPostgresOptions = {},
): Promise<EphemeralPostgres> {
  const dirs = postgresBinDirs();
  const initdb = findBinary({
    name: 'initdb',
    debianPackage: 'postgresql',
    brewFormula: 'postgresql@15',
    extraDirs: dirs,
  });
  const postgres = findBinary({
    name: 'postgres',
    debianPackage: 'postgresql',
    brewFormula: 'postgresql@15',
    extraDirs: dirs,
  });
  const user = serverUser();
  const dataDir = mkdtempSync(join(tmpdir(), 'stablebooks-pg-'));
  const forgetAtExit = removeAtExit(dataDir);
  if (user) chownSync(dataDir, user.uid, user.gid);
  const asUser = user ? { uid: user.uid, gid: user.gid } : {};
  try {
    execFileSync(
      initdb,
      ['-D', join(dataDir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale'],
      {
        ...asUser,
        stdio: 'pipe',
      },
    );
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`initdb failed: ${stderr ?? String(err)}`);
  }
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const launch = async (): Promise<ManagedProcess> => {
    const proc = startManagedProcess(
      postgres,
      [
        '-D',
        join(dataDir, 'data'),
        '-p',
        String(port),
        '-k',
        dataDir,
        '-c',
        'listen_addresses=127.0.0.1',
        ...(options.durable
          ? []
          : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
        '-c',
        'max_connections=300',
        ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
      ],
      asUser,
    );
    await waitUntilReady(proc, 'PostgreSQL', async () => {
      const client = new pg.Client({ connectionString: url });
      try {
        await client.connect();
        await client.query('select 1');
        return true;
      } finally {
        await client.end().catch(() => {});
      }
    });
    return proc;
  };
  let proc: ManagedProcess | undefined;
  try {
    proc = await launch();
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    async pause() {
      // SIGINT is PostgreSQL's "fast" shutdown: it disconnects clients and exits at once.
      await proc?.stop('SIGINT');
      proc = undefined;
    },
    async resume() {
      proc ??= await launch();
    },
    async stop() {
      await proc?.stop('SIGINT');
      proc = undefined;
      rmSync(dataDir, { recursive: true, force: true });
      forgetAtExit();
    },
  };
}
