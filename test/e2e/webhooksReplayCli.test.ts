import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { QUEUE, webhookJob } from '../../jobs/queues.ts';
import { freePort } from '../../src/devservices/freePort.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { daemonEnvForConfig } from '../helpers/daemonProcess.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';
import { runCli } from '../helpers/runCli.ts';

/**
 * `stablebooks webhooks replay` against a running daemon: a payment whose webhook failed for good
 * (the service answered 50001 "intent not found" each time the daemon fetched it, so after its
 * job's attempts the row is `failed` and its job *completed*) is replayed from the CLI and booked,
 * exactly once, however often it is replayed. Refusals change nothing; nothing secret is printed.
 */
const pipeline = await startPipeline();
await pipeline.startDaemon();
const env = daemonEnvForConfig(pipeline.config);
const store = pipeline.config.stores[0]!;
const queue = new Queue(QUEUE.webhooks, {
  connection: { url: pipeline.config.redisUrl },
  prefix: pipeline.config.queuePrefix,
});
afterAll(() => queue.close());

const EXACT_LINES = [
  'checkout.confirmed: assets:in_transit 24750000',
  'checkout.confirmed: expense:service_fees 250000',
  'checkout.confirmed: income:sales -25000000',
];

type InboxRow = {
  status: string;
  attempts: number;
  error: string | null;
};

async function inboxRow(webhookId: string): Promise<InboxRow | undefined> {
  const { rows } = await pipeline.db.execute<InboxRow>(
    sql`select status, attempts, error from webhook_inbox where webhook_id = ${webhookId}`,
  );
  return rows[0];
}

async function entriesOf(intentId: string): Promise<number> {
  const { rows } = await pipeline.db.execute<{ n: string }>(
    sql`select count(*)::text as n from ledger_entries where ref_id = ${intentId}`,
  );
  return Number(rows[0]?.n);
}

async function openFindingsOf(webhookId: string): Promise<string[]> {
  const { rows } = await pipeline.db.execute<{ kind: string }>(sql`
    select kind from findings where ref_type = 'webhook' and ref_id = ${webhookId} and resolved_at is null`);
  return rows.map((r) => r.kind);
}

async function jobState(webhookId: string): Promise<string | undefined> {
  return (await queue.getJob(webhookJob.jobId(webhookId)))?.getState();
}

/** A row stored as the intake would, for the refusal cases (headers carry a signature). */
async function insertRow(status: 'failed' | 'rejected', storeId = 'st_a'): Promise<string> {
  const id = `wh_${randomUUID()}`;
  await pipeline.db.execute(sql`
    insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body, attempts, error)
    values (${id}, ${storeId}, 'checkout', ${status},
            ${JSON.stringify({ 'x-webhook-signature': SIGNATURE, 'x-api-key': store.apiKey })}::jsonb,
            ${Buffer.from(status === 'rejected' ? '{"broken' : '{}')}, 1,
            ${status === 'rejected' ? 'body is not valid JSON' : 'all_svc_checkout_intent_id: Required'})`);
  return id;
}
const SIGNATURE = `sig-${randomUUID()}`;

/** Every output of the CLI, checked for secrets at the end. */
const outputs: string[] = [];
async function cli(args: string[], extraEnv: Record<string, string> = {}) {
  const run = await runCli(['webhooks', 'replay', ...args], { ...env, ...extraEnv });
  outputs.push(run.stdout, run.stderr);
  return run;
}

/** A paid intent the daemon is not tracking, whose one webhook failed on the service's 50001. */
async function failedPayment(): Promise<{ intentId: string; webhookId: string }> {
  const created = await pipeline.sandbox
    .client('st_a')
    .createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n });
  const intentId = created.allsvc_checkout_intent_id;
  // Until the test lifts it: the webhook's job retries a 50001 (and the poller, which tracks the
  // intent from the first refusal, asks too).
  expect(
    (await pipeline.sandbox.control('/_sandbox/faults', { error_next: { code: 50001, count: 10_000 } }))
      .status,
  ).toBe(200);
  expect((await pipeline.sandbox.control(`/_sandbox/intents/${intentId}/pay`, {})).status).toBe(200);
  const log =
    await pipeline.sandbox.control<Array<{ webhook_id: string; body: Record<string, unknown> }>>(
      '/_sandbox/webhooks',
    );
  const webhookId = log.body.find((d) => d.body.all_svc_checkout_intent_id === intentId)?.webhook_id;
  expect(webhookId).toBeDefined();
  return { intentId, webhookId: webhookId! };
}

const payment = await failedPayment();

describe('stablebooks webhooks replay', () => {
  it('behavior: a failed webhook is replayed from the CLI and books its payment once', async () => {
    const failed = await pipeline.waitFor(async () => {
      const row = await inboxRow(payment.webhookId);
      return row?.status === 'failed' && (await jobState(payment.webhookId)) === 'completed'
        ? row
        : undefined;
    });
    expect(failed.error).toMatch(/50001/);
    expect(await ledgerLinesOf(pipeline.db, payment.intentId)).toEqual([]);
    expect(await openFindingsOf(payment.webhookId)).toEqual(['webhook_for_unknown_intent']);
    // The service knows the intent again: the last injected error is used up (by a poll).
    await pipeline.sandbox.control('/_sandbox/faults', { error_next: { code: 50001, count: 1 } });
    await pipeline.waitFor(
      async () =>
        (await pipeline.sandbox.control<{ errorNext: unknown }>('/_sandbox/faults', {})).body.errorNext ===
        null,
    );

    const run = await cli([payment.webhookId, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout) as {
      dry_run: boolean;
      webhooks: Array<{ webhook_id: string; previous_status: string; job: string; last_error: string }>;
    };
    expect(out.dry_run).toBe(false);
    expect(out.webhooks).toHaveLength(1);
    // The finished job under the webhook's id had to go: an add alone would have been ignored.
    expect(out.webhooks[0]).toMatchObject({
      webhook_id: payment.webhookId,
      previous_status: 'failed',
      job: 'replaced',
    });
    expect(out.webhooks[0]?.last_error).toMatch(/50001/);

    const processed = await pipeline.waitFor(async () => {
      const row = await inboxRow(payment.webhookId);
      return row?.status === 'processed' ? row : undefined;
    });
    expect(processed).toEqual({ status: 'processed', attempts: failed.attempts + 1, error: null });
    expect(await ledgerLinesOf(pipeline.db, payment.intentId)).toEqual(EXACT_LINES);
    expect(await entriesOf(payment.intentId)).toBe(1);
    // The finding the failure raised is resolved by the success: nobody is sent to look at it.
    expect(await openFindingsOf(payment.webhookId)).toEqual([]);
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  }, 60_000);

  it('behavior: replaying a processed webhook runs it again and books nothing twice', async () => {
    const before = await inboxRow(payment.webhookId);
    await pipeline.waitFor(async () => (await jobState(payment.webhookId)) === 'completed');
    const run = await cli([payment.webhookId]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^replayed 1 webhook: a running daemon's workers process them now/);
    expect(run.stdout).toMatch(new RegExp(`${payment.webhookId}\\s+st_a\\s+checkout\\s+processed\\s`));
    const again = await pipeline.waitFor(async () => {
      const row = await inboxRow(payment.webhookId);
      return row?.status === 'processed' && row.attempts > before!.attempts ? row : undefined;
    });
    expect(again.attempts).toBe(before!.attempts + 1);
    expect(await ledgerLinesOf(pipeline.db, payment.intentId)).toEqual(EXACT_LINES);
    expect(await entriesOf(payment.intentId)).toBe(1);
  }, 60_000);

  it('error: an unknown webhook id is one line, exit 1, and nothing changes', async () => {
    const before = await inboxRow(payment.webhookId);
    const run = await cli([payment.webhookId, 'wh_nobody']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('stablebooks: webhook wh_nobody is not in the inbox; nothing was changed\n');
    expect(await inboxRow(payment.webhookId)).toEqual(before);
  });

  it('error: a rejected webhook is not replayable, nothing changes', async () => {
    const rejected = await insertRow('rejected');
    const failed = await insertRow('failed');
    const run = await cli([failed, rejected]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `stablebooks: webhook ${rejected} was rejected at intake (body not JSON, kept for audit) and cannot be replayed; nothing was changed\n`,
    );
    expect((await inboxRow(rejected))?.status).toBe('rejected');
    expect((await inboxRow(failed))?.status).toBe('failed');
  });

  it('behavior: --failed --dry-run lists the failed webhooks of a store and changes nothing', async () => {
    const ours = await insertRow('failed', 'st_a');
    const theirs = await insertRow('failed', 'st_other');
    const run = await cli(['--failed', '--store', 'st_a', '--since', '2020-01-01', '--dry-run']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^would replay \d+ webhooks? \(dry run: nothing changed\)/);
    expect(run.stdout).toContain(ours);
    expect(run.stdout).toMatch(/all_svc_checkout_intent_id: Required/);
    expect(run.stdout).not.toContain(theirs);
    expect(run.stdout).not.toContain(payment.webhookId);
    expect((await inboxRow(ours))?.status).toBe('failed');
    const none = await cli(['--failed', '--store', 'st_a', '--since', '2999-01-01T00:00:00Z', '--json']);
    expect(JSON.parse(none.stdout)).toEqual({ dry_run: false, more: false, webhooks: [] });
  });

  it('error: Redis unreachable is one line, exit 1, and nothing changes', async () => {
    const failed = await insertRow('failed');
    const run = await cli([failed], { REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^stablebooks: REDIS_URL: Redis is not reachable \(.*\); nothing was changed\n$/,
    );
    expect((await inboxRow(failed))?.status).toBe('failed');
  });

  it.each([
    [[], 'stablebooks: name the webhooks to replay, or give --failed for every failed one'],
    [['wh_1', '--failed'], 'stablebooks: give webhook ids or --failed, not both'],
    [['wh_1', '--store', 'st_a'], 'stablebooks: --store, --since and --limit go with --failed'],
    [
      ['--failed', '--since', 'yesterday'],
      'stablebooks: --since: yesterday is not a date (2026-11-21) or an ISO 8601 time with a zone',
    ],
    [['--failed', '--limit', '0'], 'stablebooks: --limit: 0 is not a whole number from 1 to 100000'],
  ])('error: bad arguments %j are one line and exit 1', async (args, message) => {
    const run = await cli(args);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`${message}\n`);
  });

  it('behavior: --help describes the command', async () => {
    const run = await cli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/--failed/);
    expect(run.stdout).toMatch(/--dry-run/);
  });

  it('security: neither the api secret nor a stored signature is ever printed', () => {
    expect(outputs.join('').length).toBeGreaterThan(0);
    for (const secret of [store.apiSecret, SIGNATURE])
      expect(outputs.filter((o) => o.includes(secret))).toEqual([]);
  });
});
