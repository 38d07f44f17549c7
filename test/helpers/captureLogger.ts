import { Writable } from 'node:stream';
import type { LevelWithSilent } from 'pino';
import { createLogger, type Logger } from '../../src/logging/logger.ts';

/** A real logger whose lines are kept in memory, for tests that read what was logged. */
export function captureLogger(options: { level?: LevelWithSilent; secrets?: string[] } = {}): {
  logger: Logger;
  lines: string[];
} {
  const lines: string[] = [];
  const logger = createLogger({
    level: options.level ?? 'debug',
    secrets: options.secrets,
    destination: new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  });
  return { logger, lines };
}
