import { type DestinationStream, type LevelWithSilent, type Logger, pino } from 'pino';

export type { Logger } from 'pino';

/**
 * Keys whose values are secrets wherever they appear in a logged object: api secrets, request,
 * response and webhook signatures, claim tokens and claim URLs, the encryption key, admin tokens.
 */
const SECRET_KEY =
  /secret|signature|token|claim_?url|claim_?link_?url|encryption_?key|password|authorization|cookie/i;
const CENSOR = '[redacted]';

/**
 * A claim URL is a bearer secret built from the link's token (`<base>/claim/<token>`) and every
 * link has its own, so no list of known values can hold them: any `/claim/<long token>` in a line
 * is scrubbed by shape, whatever key (or message) carries it.
 */
const CLAIM_LINK_PATH = /\/claim\/[A-Za-z0-9_~.%-]{16,}/g;

/**
 * Secret values learnt while running (a claim link's token and URL, as the create call returns
 * them), scrubbed from every line of every logger like the configured ones. Bounded: the most
 * recent MAX_RUNTIME_SECRETS are kept (a CLI run learns one or two; the daemon creates none).
 */
const MAX_RUNTIME_SECRETS = 1000;
const runtimeSecrets = new Set<string>();
let runtimePattern: RegExp | undefined;

/** Scrubs `value` from every log line from now on (values shorter than 8 characters are ignored). */
export function addSecretValue(value: string | null | undefined): void {
  if (!value || value.length < 8 || runtimeSecrets.has(value)) return;
  runtimeSecrets.add(value);
  if (runtimeSecrets.size > MAX_RUNTIME_SECRETS) {
    const oldest = runtimeSecrets.values().next().value;
    if (oldest !== undefined) runtimeSecrets.delete(oldest);
  }
  runtimePattern = undefined;
}

function scrubRuntime(line: string): string {
  if (runtimeSecrets.size === 0) return line;
  runtimePattern ??= literalPattern([...runtimeSecrets]);
  return line.replace(runtimePattern, CENSOR);
}

/**
 * Removes claim-URL tokens and the secret values learnt at run time from a text (for error
 * messages kept outside the logs, such as payouts.last_error).
 */
export function redactClaimLinks(text: string): string {
  return scrubRuntime(text).replace(CLAIM_LINK_PATH, `/claim/${CENSOR}`);
}

/**
 * Two layers, because either alone leaks: (1) any key matching SECRET_KEY is censored at any
 * depth, before serialisation; (2) the final line is scrubbed of every known secret value (the
 * configured ones and those added with addSecretValue) and of anything shaped like a claim URL,
 * which catches a secret inside an error message or an unexpected field name.
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

function buildScrubber(secrets: string[]): (line: string) => string {
  if (secrets.length === 0) return redactClaimLinks;
  const pattern = literalPattern(secrets);
  return (line) => redactClaimLinks(line.replace(pattern, CENSOR));
}

/** One regex for a list of literal values; a secret can reach the line raw or JSON-escaped. */
function literalPattern(secrets: string[]): RegExp {
  const forms = [...new Set(secrets.flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]))].sort(
    (a, b) => b.length - a.length,
  );
  return new RegExp(forms.map(escapeRegExp).join('|'), 'g');
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
