import { type DestinationStream, type LevelWithSilent, type Logger, pino } from 'pino';

export type { Logger } from 'pino';

/**
 * Keys whose values are secrets wherever they appear in a logged object: api secrets, request,
 * response and webhook signatures, claim tokens and claim URLs, the encryption key, admin tokens.
 */
const SECRET_KEY = /secret|signature|token|claim_?url|encryption_?key|password|authorization|cookie/i;
const CENSOR = '[redacted]';

/**
 * Two layers, because either alone leaks: (1) any key matching SECRET_KEY is censored at any
 * depth, before serialisation; (2) the final line is scrubbed of every known secret value, which
 * catches a secret inside an error message or an unexpected field name.
 */
export function createLogger(options: {
  level: LevelWithSilent;
  /** Known secret values (api secrets, ENCRYPTION_KEY, ADMIN_TOKEN) to scrub from every line. */
  secrets?: string[];
  destination?: DestinationStream;
  name?: string;
}): Logger {
  const secrets = (options.secrets ?? []).filter((s) => s.length >= 8);
  const scrub = buildScrubber(secrets);
  return pino(
    {
      level: options.level,
      base: options.name ? { name: options.name } : undefined,
      formatters: { log: (obj) => censorDeep(obj, 0) as Record<string, unknown> },
      serializers: { err: (e: unknown) => censorDeep(pino.stdSerializers.err(e as Error), 0) },
      hooks: { streamWrite: scrub },
    },
    options.destination,
  );
}

function censorDeep(value: unknown, depth: number): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Buffer.isBuffer(value)) return value;
  if (Array.isArray(value)) return value.map((v) => censorDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET_KEY.test(k) && v !== null && v !== undefined ? CENSOR : censorDeep(v, depth + 1);
  }
  if (value instanceof Error) {
    out.message = value.message;
    out.stack = value.stack;
  }
  return out;
}

function buildScrubber(secrets: string[]): ((line: string) => string) | undefined {
  if (secrets.length === 0) return undefined;
  // A secret can reach the line raw or JSON-escaped; scrub both forms.
  const forms = [...new Set(secrets.flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]))].sort(
    (a, b) => b.length - a.length,
  );
  const pattern = new RegExp(forms.map(escapeRegExp).join('|'), 'g');
  return (line) => line.replace(pattern, CENSOR);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
