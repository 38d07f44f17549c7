import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { CliError, EXIT_USAGE } from './CliError.ts';

/**
 * Reads a .env file into process.env before a command parses its configuration: `choice` when
 * `--dotenv <path>` gave one (it must exist), none with `--no-dotenv`, else `.env` in the
 * current directory when there is one. A variable already set in the environment, even to the
 * empty string, wins over the file: process.loadEnvFile never overwrites. The file is parsed by
 * Node.js (`NAME=value` lines, `#` comments, values in single or double quotes), the same syntax
 * as `node --env-file`. Returns the path read, if any.
 */
export function loadEnvFile(choice: string | false | undefined, cwd = process.cwd()): string | undefined {
  if (choice === false) return undefined;
  const path = resolve(cwd, choice ?? '.env');
  if (choice === undefined && !existsSync(path)) return undefined;
  const where = choice === undefined ? path : `--dotenv: ${choice}`;
  if (typeof process.loadEnvFile !== 'function') {
    throw new CliError(
      `${where}: reading it needs Node.js 20.12 or newer (this is ${process.version})`,
      EXIT_USAGE,
    );
  }
  try {
    process.loadEnvFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      `${where}: ${code === 'ENOENT' ? 'no such file' : `is not a readable file (${code ?? 'unknown error'})`}`,
      EXIT_USAGE,
    );
  }
  return path;
}
