import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { coerceError } from '../errors/coerceError.ts';

/** The notifiers an alert can go to. */
export const NOTIFIER_NAMES = ['webhook', 'slack'] as const;
export type NotifierName = (typeof NOTIFIER_NAMES)[number];

/**
 * ALERT_ROUTES_FILE: which notifiers each severity goes to, e.g.
 * `{"critical": ["webhook", "slack"], "warning": ["webhook"]}`. A severity not named goes to every
 * configured notifier; without the file every alert goes to every configured notifier.
 */
export type AlertRoutes = Partial<Record<'info' | 'warning' | 'critical', NotifierName[]>>;

const routesSchema = z.strictObject({
  info: z.array(z.enum(NOTIFIER_NAMES)).optional(),
  warning: z.array(z.enum(NOTIFIER_NAMES)).optional(),
  critical: z.array(z.enum(NOTIFIER_NAMES)).optional(),
});

/** Reads and checks the routes file, one problem line per mistake (for ConfigError). */
export function loadAlertRoutes(file: string): { routes: AlertRoutes | undefined; problems: string[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const reason = coerceError(err).message;
    return { routes: undefined, problems: [`ALERT_ROUTES_FILE: cannot read ${file} as JSON: ${reason}`] };
  }
  const parsed = routesSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      routes: undefined,
      problems: parsed.error.issues.map(
        (i) =>
          `ALERT_ROUTES_FILE: ${i.path.join('.') || '(top)'}: ${i.message} (expected e.g. {"critical": ["webhook", "slack"], "warning": ["webhook"]})`,
      ),
    };
  }
  return { routes: parsed.data, problems: [] };
}
