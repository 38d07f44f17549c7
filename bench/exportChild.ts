/**
 * The child process of bench/export.ts: one `stablebooks` command (`export`, `rates import`,
 * `ledger balances --value`), through the CLI's own main() (as bin/stablebooks.js calls it, under
 * the parent's tsx execArgv), with the arguments it was forked with. Reports its wall time, CPU
 * time, exit code, stderr and `process.resourceUsage().maxRSS` (the peak resident set of this
 * process) to the parent over IPC. A file of its own, so that the process holds only what the
 * command needs, as a `stablebooks` process does.
 */
import { performance } from 'node:perf_hooks';

export interface ExportChildReport {
  exitCode: number;
  wallMs: number;
  /** User + system CPU of this process from the call of main() to its end, ms. */
  cpuMs: number;
  /** Bytes. */
  maxRss: number;
  stderr: string;
}

async function childMain(): Promise<void> {
  let stderr = '';
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    stderr += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return write(chunk, ...rest);
  }) as typeof process.stderr.write;
  const { main } = await import('../src/cli/main.ts');
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await main([process.argv[0] ?? 'node', 'stablebooks', '--no-dotenv', ...process.argv.slice(2)]);
  const cpu = process.cpuUsage(cpu0);
  const report: ExportChildReport = {
    exitCode: Number(process.exitCode ?? 0),
    wallMs: performance.now() - t0,
    cpuMs: (cpu.user + cpu.system) / 1000,
    maxRss: process.resourceUsage().maxRSS * 1024,
    stderr,
  };
  await new Promise<void>((resolve) => {
    if (process.send) process.send(report, undefined, {}, () => resolve());
    else resolve();
  });
  process.disconnect?.();
}

await childMain();
