import { existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * A server binary the ephemeral services need and could not find. The message is one line that
 * names the package to install, because that is the only thing the reader can do about it.
 */
export class MissingBinaryError extends Error {
  override name = 'MissingBinaryError';
}

export interface BinarySpec {
  /** Executable name, e.g. `initdb`. */
  name: string;
  /** The Debian package that ships it, e.g. `postgresql`. */
  debianPackage: string;
  /** The Homebrew formula that ships it, e.g. `postgresql@15`. */
  brewFormula: string;
  /** Folders searched before PATH (Debian keeps PostgreSQL server binaries off PATH). */
  extraDirs?: string[];
}

/** Debian puts initdb and postgres in /usr/lib/postgresql/<major>/bin; newest major first. */
export function postgresBinDirs(): string[] {
  const root = '/usr/lib/postgresql';
  const dirs: string[] = [];
  if (existsSync(root)) {
    const majors = readdirSync(root)
      .filter((d) => /^\d+$/.test(d))
      .sort((a, b) => Number(b) - Number(a));
    for (const m of majors) dirs.push(join(root, m, 'bin'));
  }
  dirs.push('/opt/homebrew/opt/postgresql@15/bin', '/usr/local/opt/postgresql@15/bin');
  return dirs;
}

export function findBinary(spec: BinarySpec, env: NodeJS.ProcessEnv = process.env): string {
  const dirs = [...(spec.extraDirs ?? []), ...(env.PATH ?? '').split(delimiter).filter(Boolean)];
  for (const dir of dirs) {
    const candidate = join(dir, spec.name);
    if (existsSync(candidate)) return candidate;
  }
  const how =
    process.platform === 'darwin'
      ? `brew install ${spec.brewFormula}`
      : `apt-get install -y ${spec.debianPackage}`;
  throw new MissingBinaryError(
    `${spec.name} not found: install the package ${spec.debianPackage} (${how}), or set the URL of a running server`,
  );
}
