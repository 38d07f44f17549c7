import { userInfo } from 'node:os';

/** Who `--by` names when it is not given: the user running the command. */
export function defaultUser(): string {
  try {
    return userInfo().username || 'unknown';
  } catch {
    return process.env.USER ?? 'unknown';
  }
}
