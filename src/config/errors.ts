import { StablebooksError } from '../errors/stablebooksError.ts';
/**
 * Configuration that cannot work. Each problem is one line naming the variable and what to do;
 * values are never echoed, because several of them are secrets.
 */
export class ConfigError extends StablebooksError {
  override name = 'ConfigError';
  readonly retryable = false;
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}
