import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';

/**
 * A server started as a child process, with the tail of its output kept for error messages and
 * a stop that escalates to SIGKILL, so a hung server never hangs the caller.
 */
export interface ManagedProcess {
  readonly child: ChildProcess;
  /** Last lines the process printed (stdout and stderr), for error messages. */
  output(): string;
  /** Resolves when the process has exited. */
  readonly exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();
const foldersAtExit = new Set<string>();
let exitHookInstalled = false;

/**
 * If the parent exits without stopping its children (Ctrl-C in the demo), take them down with it
 * and remove the folders of their data, which their own stop() would have removed.
 */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL');
    for (const folder of foldersAtExit) rmSync(folder, { recursive: true, force: true });
  });
}

/** Removes `folder` when this process exits, unless the returned function is called first. */
export function removeAtExit(folder: string): () => void {
  installExitHook();
  foldersAtExit.add(folder);
  return () => {
    foldersAtExit.delete(folder);
  };
}

export function startManagedProcess(
  command: string,
  args: string[],
  options: SpawnOptions = {},
): ManagedProcess {
  installExitHook();
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code) => {
      live.delete(child);
      resolve(code);
    });
    child.on('error', (err) => {
      tail += `\n${err.message}`;
      live.delete(child);
      resolve(null);
    });
  });
  return {
    child,
    output: () => tail,
    exited,
    async stop(signal = 'SIGTERM', timeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Polls `probe` until it resolves true, the process dies, or the time runs out. */
export async function waitUntilReady(
  proc: ManagedProcess,
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let died = false;
  void proc.exited.then(() => {
    died = true;
  });
  while (Date.now() < deadline) {
    if (died) throw new Error(`${what} exited during start-up: ${lastLine(proc.output())}`);
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  await proc.stop('SIGKILL');
  throw new Error(`${what} did not become ready in ${timeoutMs} ms: ${lastLine(proc.output())}`);
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return lines.slice(-3).join(' | ') || '(no output)';
}
