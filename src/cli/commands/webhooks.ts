import type { Queue } from 'bullmq';
import type { Command } from 'commander';
import type { RequeueOutcome } from '../../../jobs/requeueWebhookJobs.ts';
import { coerceError } from '../../errors/coerceError.ts';
import type { ReplayedWebhook, ReplaySelection } from '../../intake/replayWebhooks.ts';
import { renderTable } from '../../text/table.ts';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';

const REDIS_TIMEOUT_MS = 5_000;
const ERROR_COLUMN_MAX = 60;

interface ReplayOptions {
  failed?: boolean;
  store?: string;
  since?: string;
  limit?: string;
  dryRun?: boolean;
  json?: boolean;
}

interface ReplayResult {
  dry_run: boolean;
  webhooks: Array<{
    webhook_id: string;
    store_id: string;
    endpoint: string;
    previous_status: ReplayedWebhook['previousStatus'];
    received_at: string;
    attempts: number;
    last_error: string | null;
    job: RequeueOutcome | null;
  }>;
  /** --failed matched more than --limit; running the command again takes the next ones. */
  more: boolean;
}

/** `stablebooks webhooks replay`: stored webhooks processed again by the running daemon. */
export function registerWebhooks(program: Command): void {
  const webhooks = program.command('webhooks').description('stored webhooks: replay them');

  webhooks
    .command('replay')
    .description(
      'process stored webhooks again (e.g. failed ones once their cause is fixed): their inbox rows go back ' +
        "to received and get jobs that a running daemon's workers pick up; processing is idempotent, so " +
        'nothing is booked twice. Rejected webhooks (body not JSON) are kept for audit and cannot be replayed',
    )
    .argument('[webhook_id...]', 'webhooks to replay, whatever their status (except rejected)')
    .option('--failed', 'every webhook whose processing failed, instead of naming them')
    .option('--store <id>', 'with --failed: only this store')
    .option('--since <time>', 'with --failed: only webhooks received at or after this time (ISO 8601)')
    .option('--limit <n>', 'with --failed: at most this many, oldest first (default 1000)')
    .option('--dry-run', 'show what would be replayed, change nothing')
    .option('--json', 'machine-readable output')
    .action(async (ids: string[], opts: ReplayOptions) => {
      const selection = parseSelection(ids, opts);
      // Each action imports what it runs (docs/decisions.md, "CLI start-up").
      const [
        { loadDatabaseUrl },
        { loadQueueSettings },
        { createDatabase },
        { replayWebhooks },
        { requeueWebhookJobs, WebhookJobBusyError },
      ] = await Promise.all([
        import('../../config/loadConfig.ts'),
        import('../../config/loadQueueSettings.ts'),
        import('../../db/database.ts'),
        import('../../intake/replayWebhooks.ts'),
        import('../../../jobs/requeueWebhookJobs.ts'),
      ]);
      const databaseUrl = loadDatabaseUrl(process.env);
      // Redis is reached before any row changes, so an unreachable Redis leaves the inbox as it was.
      const jobs = opts.dryRun ? undefined : await openWebhookQueue(loadQueueSettings(process.env));
      const database = createDatabase(databaseUrl, { max: 1 });
      try {
        const outcome = await replayWebhooks(database.db, selection, { dryRun: opts.dryRun });
        if (outcome.kind === 'refused') throw new CliError(`${refusal(outcome)}; nothing was changed`);
        const result: ReplayResult = {
          dry_run: Boolean(opts.dryRun),
          more: outcome.more,
          webhooks: outcome.webhooks.map((w) => ({
            webhook_id: w.webhookId,
            store_id: w.storeId,
            endpoint: w.endpoint,
            previous_status: w.previousStatus,
            received_at: w.receivedAt.toISOString(),
            attempts: w.attempts,
            last_error: w.lastError,
            job: null,
          })),
        };
        if (jobs) {
          try {
            const requeued = await requeueWebhookJobs(
              jobs.queue,
              outcome.webhooks.map((w) => w.webhookId),
            );
            for (const w of result.webhooks) w.job = requeued.get(w.webhook_id) ?? null;
          } catch (err) {
            // The rows are `received` now; the ids on stdout let the operator finish the replay.
            printResult(opts.json, result, (r) => render(r, opts));
            if (err instanceof WebhookJobBusyError) throw new CliError(err.message);
            throw new CliError(
              `the webhooks above were reset to received but their jobs could not be added (${firstLine(err)}): ` +
                'run stablebooks webhooks replay again with their ids',
            );
          }
        }
        printResult(opts.json, result, (r) => render(r, opts));
      } finally {
        await database.close();
        await jobs?.close();
      }
    });
}

function parseSelection(ids: string[], opts: ReplayOptions): ReplaySelection {
  if (ids.length > 0 && opts.failed) throw new CliError('give webhook ids or --failed, not both');
  if (!opts.failed) {
    if (opts.store !== undefined || opts.since !== undefined || opts.limit !== undefined)
      throw new CliError('--store, --since and --limit go with --failed');
    if (ids.length === 0)
      throw new CliError('name the webhooks to replay, or give --failed for every failed one');
    if (ids.some((id) => id.trim() === '')) throw new CliError('a webhook id is empty');
    return { kind: 'ids', webhookIds: [...new Set(ids)] };
  }
  const limit = opts.limit === undefined ? 1000 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100_000)
    throw new CliError(`--limit: ${opts.limit} is not a whole number from 1 to 100000`);
  if (opts.store !== undefined && opts.store.trim() === '') throw new CliError('--store: is empty');
  return {
    kind: 'failed',
    storeId: opts.store,
    since: opts.since === undefined ? undefined : parseSince(opts.since),
    limit,
  };
}

/** A time needs its zone: without one, the same text would mean another instant on another machine. */
function parseSince(text: string): Date {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const withZone = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/.test(text);
  const time = new Date(dateOnly ? `${text}T00:00:00Z` : text);
  if ((!dateOnly && !withZone) || Number.isNaN(time.getTime()))
    throw new CliError(`--since: ${text} is not a date (2026-11-21) or an ISO 8601 time with a zone`);
  return time;
}

async function openWebhookQueue(settings: {
  redisUrl: string;
  queuePrefix: string;
}): Promise<{ queue: Queue; close(): Promise<void> }> {
  const [{ Queue }, { Redis }, { QUEUE }] = await Promise.all([
    import('bullmq'),
    import('ioredis'),
    import('../../../jobs/queues.ts'),
  ]);
  const redis = new Redis(settings.redisUrl, {
    lazyConnect: true,
    connectTimeout: REDIS_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    // One short command: a Redis that is down is an error now, not a wait.
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw new CliError(`REDIS_URL: Redis is not reachable (${firstLine(err)}); nothing was changed`);
  }
  const queue = new Queue(QUEUE.webhooks, { connection: redis, prefix: settings.queuePrefix });
  queue.on('error', () => {});
  return {
    queue,
    async close() {
      await queue.close();
      redis.disconnect();
    },
  };
}

function refusal(outcome: { unknown: string[]; rejected: string[] }): string {
  const parts: string[] = [];
  if (outcome.unknown.length > 0)
    parts.push(`${idList(outcome.unknown)} ${outcome.unknown.length === 1 ? 'is' : 'are'} not in the inbox`);
  if (outcome.rejected.length > 0)
    parts.push(
      `${idList(outcome.rejected)} ${outcome.rejected.length === 1 ? 'was' : 'were'} rejected at intake ` +
        '(body not JSON, kept for audit) and cannot be replayed',
    );
  return parts.join('; ');
}

/** The error stays one readable line however many ids were given. */
function idList(ids: string[]): string {
  const shown = ids.slice(0, 5).join(', ');
  const rest = ids.length > 5 ? ` and ${ids.length - 5} more` : '';
  return `${ids.length === 1 ? 'webhook' : 'webhooks'} ${shown}${rest}`;
}

function render(r: ReplayResult, opts: ReplayOptions): string {
  if (r.webhooks.length === 0) return opts.failed ? 'no failed webhooks match' : 'nothing to replay';
  const head = r.dry_run
    ? `would replay ${plural(r.webhooks.length, 'webhook')} (dry run: nothing changed)`
    : `replayed ${plural(r.webhooks.length, 'webhook')}: a running daemon's workers process them now`;
  const table = renderTable(
    ['webhook', 'store', 'endpoint', 'was', 'received at', 'attempts', 'job', 'last error'],
    r.webhooks.map((w) => [
      w.webhook_id,
      w.store_id,
      w.endpoint,
      w.previous_status,
      w.received_at,
      String(w.attempts),
      w.job ?? '-',
      shorten(w.last_error),
    ]),
  );
  const more = r.more
    ? [
        r.dry_run
          ? 'more failed webhooks match than --limit'
          : 'more failed webhooks match: run the command again for the next ones',
      ]
    : [];
  return [head, table, ...more].join('\n');
}

function shorten(error: string | null): string {
  if (!error) return '-';
  const flat = error.replace(/\s+/g, ' ');
  return flat.length > ERROR_COLUMN_MAX ? `${flat.slice(0, ERROR_COLUMN_MAX - 1)}…` : flat;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function firstLine(err: unknown): string {
  return coerceError(err).message.split('\n')[0] ?? '';
}
