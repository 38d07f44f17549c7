import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/stablebooks.js', import.meta.url));

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `stablebooks` binary in a child process with exactly the given environment: not
 * even a .env file in the working directory is read (`--no-dotenv`), unless `dotenv` says so.
 */
export function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  options: { timeoutMs?: number; cwd?: string; dotenv?: boolean } = {},
): Promise<CliRun> {
  const clean: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' };
  for (const [k, v] of Object.entries(env)) if (v !== undefined) clean[k] = v;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...(options.dotenv ? [] : ['--no-dotenv']), ...args],
      { env: clean, cwd: options.cwd, timeout: options.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
