/**
 * Exit status of a command line that could not be understood (commander's errors, a bad --dotenv)
 * or of a configuration that cannot work: nothing was attempted.
 */
export const EXIT_USAGE = 2;

/** An error the CLI prints as one line (no stack) before exiting non-zero. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
