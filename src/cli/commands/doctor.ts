import type { Command } from 'commander';
import { printResult } from '../output.ts';

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description(
      "check configuration, PostgreSQL, Redis, RPC URLs, token decimals and each store's credentials",
    )
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      // Loaded on use: viem and the service client are not for every command.
      const { runDoctor } = await import('../../doctor/runDoctor.ts');
      const checks = await runDoctor(process.env);
      const ok = checks.every((c) => c.ok);
      printResult(opts.json, { ok, checks }, (r) =>
        r.checks
          .map((c) => `${c.ok ? (c.warning ? 'WARN' : 'ok  ') : 'FAIL'}  ${c.name.padEnd(14)} ${c.detail}`)
          .join('\n'),
      );
      if (!ok) process.exitCode = 1;
    });
}
