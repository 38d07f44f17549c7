import { sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import type { DomainContext } from '../../src/context/domainContext.ts';
import { processInboxBatch } from '../../src/inbox/processInboxBatch.ts';
import { failRefusedWebhook, IntentReadRefusedError } from '../../src/inbox/webhookFailures.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { applyIntentSnapshot } from '../../src/payments/applyIntentSnapshot.ts';
import { trackIntent } from '../../src/payments/createIntent.ts';
import { staleTrackedIntents } from '../../src/payments/intentTracking.ts';
import { SvcProtocolError, SvcTransportError } from '../../src/svc/errors.ts';
import type { CheckoutIntent } from '../../src/svc/models/checkoutIntent.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * The workers apply the webhooks they hold at once as one batch (jobs/processWebhook.ts). Here
 * the daemon only stores webhooks (intake role), and the test hands batches to
 * processInboxBatch: one transaction for the plain payments, the odd ones on their own path, and
 * a batch whose transaction fails falls back to one webhook at a time, failing only the bad one.
 */
const pipeline = await startPipeline();
await pipeline.startDaemon(['intake']);
const client = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 3 } });

const EXACT_LINES = [
  'checkout.confirmed: assets:in_transit 24750000',
  'checkout.confirmed: expense:service_fees 250000',
  'checkout.confirmed: income:sales -25000000',
];

/** Pays `n` intents of 25 USDT exactly and returns [intentId, webhookId] once each webhook is stored. */
async function paidAndStored(n: number): Promise<Array<{ intentId: string; webhookId: string }>> {
  const out: Array<{ intentId: string; webhookId: string }> = [];
  for (let i = 0; i < n; i++) {
    const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n });
    const intentId = created.allsvc_checkout_intent_id;
    const paid = await pipeline.sandbox.control(`/_sandbox/intents/${intentId}/pay`, {});
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    const webhookId = await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ webhook_id: string }>(sql`
        select webhook_id from webhook_inbox
        where convert_from(body, 'UTF8')::jsonb->>'all_svc_checkout_intent_id' = ${intentId}
          and convert_from(body, 'UTF8')::jsonb->>'status' = '20'`);
      return rows[0]?.webhook_id;
    });
    out.push({ intentId, webhookId });
  }
  return out;
}

/** The transaction ids that last wrote these intents' rows. */
/** Counts the statements this process sends to PostgreSQL (every pool's), by their text, until stop(). */
function statementsSent() {
  const texts: string[] = [];
  const original = pg.Client.prototype.query;
  const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (
    this: pg.Client,
    ...args: unknown[]
  ) {
    const first = args[0];
    const text = typeof first === 'string' ? first : (first as { text?: string } | undefined)?.text;
    if (text !== undefined) texts.push(text);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as unknown as pg.Client['query']);
  return {
    count: (pattern: RegExp) => texts.filter((t) => pattern.test(t)).length,
    stop: () => spy.mockRestore(),
  };
}

/** The stored bytes of a webhook. */
async function storedBody(webhookId: string): Promise<Buffer> {
  const { rows } = await pipeline.db.execute<{ body: Buffer }>(
    sql`select body from webhook_inbox where webhook_id = ${webhookId}`,
  );
  return Buffer.from(rows[0]!.body);
}

/** A checkout webhook row as the intake leaves it (received), made up by the test. */
async function storeInboxRow(webhookId: string, storeId: string, body: Buffer): Promise<void> {
  await pipeline.db.execute(sql`
    insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body)
    values (${webhookId}, ${storeId}, 'checkout', 'received', '{}'::jsonb, ${body})`);
}

/**
 * The pipeline's payments deps with the store's sandbox client counting its intent reads; each
 * read first awaits `before` (which may hold it or throw, as a hanging or failing service might),
 * and its answer passes through `answer` (which may change it or throw).
 */
function countingReads(
  answer: (id: string, intent: CheckoutIntent) => CheckoutIntent = (_id, i) => i,
  before: (id: string) => Promise<void> = async () => {},
) {
  const counts = new Map<string, number>();
  const sandboxClient = pipeline.payments.client('st_a');
  const deps: DomainContext = {
    ...pipeline.payments,
    client: () => ({
      ...sandboxClient,
      getCheckoutIntent: async (id: string) => {
        counts.set(id, (counts.get(id) ?? 0) + 1);
        await before(id);
        return answer(id, await sandboxClient.getCheckoutIntent(id));
      },
    }),
  };
  return { deps, count: (id: string) => counts.get(id) ?? 0 };
}

async function inboxStatus(webhookId: string): Promise<{ status: string; attempts: number } | undefined> {
  const { rows } = await pipeline.db.execute<{ status: string; attempts: number }>(
    sql`select status, attempts from webhook_inbox where webhook_id = ${webhookId}`,
  );
  return rows[0];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function writers(intentIds: string[]): Promise<Set<string>> {
  const { rows } = await pipeline.db.execute<{ x: string }>(sql`
    select xmin::text as x from checkout_intents where id = any(${sql.param(intentIds)}::text[])`);
  return new Set(rows.map((r) => r.x));
}

describe('processInboxBatch', () => {
  it('behavior: plain payments are applied in one transaction, each exactly as alone; a repeat changes nothing', async () => {
    const paid = await paidAndStored(5);
    const ids = paid.map((p) => p.webhookId);
    // A webhook whose body is JSON but not a checkout webhook takes its own path (a finding).
    await pipeline.db.execute(sql`
      insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body)
      values ('batch-odd', 'st_a', 'checkout', 'received', '{}'::jsonb, convert_to('{"hello":1}', 'UTF8'))`);

    const sent = statementsSent();
    const results = await processInboxBatch(pipeline.payments, [...ids, 'batch-odd', 'no-such-webhook']);
    // The intents' facts, rule 1's entries and their events: one statement each for the batch,
    // not one per payment.
    expect(sent.count(/update checkout_intents\b/i)).toBe(1);
    expect(sent.count(/insert into ledger_entries/i)).toBe(1);
    expect(sent.count(/insert into event_outbox/i)).toBe(1);
    sent.stop();
    expect(results.map((r) => (r.ok ? r.value.kind : 'error'))).toEqual([
      'applied',
      'applied',
      'applied',
      'applied',
      'applied',
      'unusable',
      'already_done',
    ]);
    // One transaction wrote every intent of the batch.
    expect((await writers(paid.map((p) => p.intentId))).size).toBe(1);
    for (const p of paid) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
    const { rows: inbox } = await pipeline.db.execute<{
      status: string;
      ref_id: string | null;
      paid: string | null;
    }>(sql`
      select status, ref_id, actual_paid_amount::text as paid from webhook_inbox
      where webhook_id = any(${sql.param(ids)}::text[]) order by ref_id`);
    // As the webhook says it (a decimal of coins), like processInboxWebhook.
    expect(inbox.map((r) => [r.status, r.paid])).toEqual(paid.map(() => ['processed', '25']));
    expect(inbox.map((r) => r.ref_id)).toEqual(paid.map((p) => p.intentId).sort());
    const { rows: odd } = await pipeline.db.execute<{ status: string }>(
      sql`select status from webhook_inbox where webhook_id = 'batch-odd'`,
    );
    expect(odd[0]?.status).toBe('failed');

    // The same batch again (a job retried after its commit): nothing new.
    const again = await processInboxBatch(pipeline.payments, ids);
    expect(again.map((r) => (r.ok ? r.value.kind : 'error'))).toEqual(ids.map(() => 'already_done'));
    for (const p of paid) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  }, 120_000);

  it('behavior: two webhooks of one intent in a batch: the second sees what the first wrote (one status change, one entry)', async () => {
    const [paid] = await paidAndStored(1);
    const { intentId, webhookId } = paid!;
    // The service delivering the same event twice under two webhook ids (a redelivery).
    await storeInboxRow(`${webhookId}-again`, 'st_a', await storedBody(webhookId));
    const results = await processInboxBatch(pipeline.payments, [webhookId, `${webhookId}-again`]);
    expect(results.map((r) => (r.ok ? r.value.kind : 'error'))).toEqual(['applied', 'applied']);
    const { rows: history } = await pipeline.db.execute<{ to_status: number }>(sql`
      select to_status from checkout_intent_status_history where intent_id = ${intentId} and to_status = 20`);
    expect(history).toHaveLength(1);
    expect(await ledgerLinesOf(pipeline.db, intentId)).toEqual(EXACT_LINES);
  }, 120_000);

  it('behavior: a read that hangs does not hold its batch: the others commit by the deadline, a straggler once its read settles, each read once', async () => {
    const paid = await paidAndStored(5);
    const slow = paid[1]!;
    const hung = paid[3]!;
    const onTime = paid.filter((p) => p !== slow && p !== hung);
    // Reads the test answers when it chooses: `slow` answers, `hung` times out (as the client's
    // last attempt does after ~46 s), both long after the batch's deadline.
    const gates = new Map<string, () => void>();
    const gate = (id: string) => new Promise<void>((resolve) => gates.set(id, resolve));
    const release = (id: string) => gates.get(id)?.();
    const reads = countingReads(undefined, async (id) => {
      if (id === slow.intentId) await gate(id);
      if (id === hung.intentId) {
        await gate(id);
        throw new SvcTransportError('checkout_intents.get', true, 'timed out after 15000 ms');
      }
    });
    const { deps } = reads;

    let done = false;
    const running = processInboxBatch(
      deps,
      paid.map((p) => p.webhookId),
      // Long enough for the sandbox's answers on a loaded machine, short beside the test's waits.
      { stragglerWaitMs: 1_000 },
    ).finally(() => {
      done = true;
    });
    onTestFinished(async () => {
      // Whatever failed: no read left hanging, no batch left writing into the next test.
      for (const p of paid) release(p.intentId);
      await running;
    });

    // Before: nothing committed until every read of the batch had settled (~46 s for a hung one).
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ n: number }>(sql`
        select count(*)::int as n from webhook_inbox
        where webhook_id = any(${sql.param(onTime.map((p) => p.webhookId))}::text[]) and status = 'processed'`);
      return rows[0]?.n === onTime.length;
    }, 5_000);
    for (const p of onTime) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
    // Together, in the batch's one transaction.
    expect((await writers(onTime.map((p) => p.intentId))).size).toBe(1);
    for (const p of [slow, hung]) {
      expect(await inboxStatus(p.webhookId)).toEqual({ status: 'received', attempts: 0 });
      expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual([]);
    }
    // Each job still gets its own webhook's result, so the batch waits for its stragglers.
    expect(done).toBe(false);

    release(slow.intentId);
    await pipeline.waitFor(async () => (await inboxStatus(slow.webhookId))?.status === 'processed', 5_000);
    expect(await ledgerLinesOf(pipeline.db, slow.intentId)).toEqual(EXACT_LINES);
    // In a transaction of its own, after the batch's.
    expect((await writers([...onTime, slow].map((p) => p.intentId))).size).toBe(2);
    expect(done).toBe(false);

    release(hung.intentId);
    const results = await running;
    // The timeout is handled as a read that fails on time: the job's to retry, nothing asked again.
    expect(results.map((r) => (r.ok ? r.value.kind : r.error.name))).toEqual([
      'applied',
      'applied',
      'applied',
      'SvcTransportError',
      'applied',
    ]);
    for (const p of paid) expect(reads.count(p.intentId), p.intentId).toBe(1);
    expect(await inboxStatus(hung.webhookId)).toEqual({ status: 'received', attempts: 0 });
    expect(await ledgerLinesOf(pipeline.db, hung.intentId)).toEqual([]);
    for (const p of [...onTime, slow]) {
      expect(await inboxStatus(p.webhookId)).toEqual({ status: 'processed', attempts: 1 });
      expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
    }

    // BullMQ's retry of the timed-out webhook: applied once, nothing posted twice.
    const retried = await processInboxBatch(pipeline.payments, [hung.webhookId, slow.webhookId]);
    expect(retried.map((r) => (r.ok ? r.value.kind : r.error.message))).toEqual(['applied', 'already_done']);
    for (const p of paid) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  }, 120_000);

  it('behavior: a service slow for every read still has its batch applied in one transaction (the deadline counts from the first intent)', async () => {
    const paid = await paidAndStored(4);
    let n = 0;
    // Each answer well after the deadline counted from the batch's start, all within it counted
    // from the first answer.
    const { deps } = countingReads(undefined, async () => {
      await sleep(1_000 + 20 * n++);
    });
    const results = await processInboxBatch(
      deps,
      paid.map((p) => p.webhookId),
      { stragglerWaitMs: 500 },
    );
    expect(results.map((r) => (r.ok ? r.value.kind : r.error.message))).toEqual(paid.map(() => 'applied'));
    expect((await writers(paid.map((p) => p.intentId))).size).toBe(1);
    for (const p of paid) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
  }, 120_000);

  it('error: an intent the API refuses to give now (40001) fails its own job without asking again; a retry applies it', async () => {
    const paid = await paidAndStored(3);
    const ids = paid.map((p) => p.webhookId);
    // The daemon's client hands 40001 to the job instead of waiting (one attempt here).
    const deps = {
      ...pipeline.payments,
      client: () => pipeline.sandbox.client('st_a', { retry: { maxAttempts: 1 } }),
    };
    const faults = await pipeline.sandbox.control('/_sandbox/faults', {
      rate_limit_next: 2,
      retry_after: '1s',
    });
    expect(faults.status).toBe(200);

    const results = await processInboxBatch(deps, ids);
    const failed = results.filter((r) => !r.ok);
    expect(failed).toHaveLength(2);
    for (const r of failed) if (!r.ok) expect(r.error).toMatchObject({ code: 40001 });
    expect(results.filter((r) => r.ok && r.value.kind === 'applied')).toHaveLength(1);
    // Both refusals were used by the batch's own requests: none was asked again at once.
    const left = await pipeline.sandbox.control<{ rateLimitNext: number }>('/_sandbox/faults', {});
    expect(left.body.rateLimitNext).toBe(0);
    const { rows } = await pipeline.db.execute<{ status: string }>(sql`
      select status from webhook_inbox where webhook_id = any(${sql.param(ids)}::text[]) order by status`);
    expect(rows.map((r) => r.status)).toEqual(['processed', 'received', 'received']);

    // BullMQ's retry: the same webhooks again.
    const retried = await processInboxBatch(deps, ids);
    expect(retried.map((r) => (r.ok ? r.value.kind : 'error')).sort()).toEqual([
      'already_done',
      'applied',
      'applied',
    ]);
    for (const p of paid) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
  }, 120_000);

  it('error: a webhook whose intent the service will not give (50001) has it tracked and goes back to its job; the rest of its batch is applied', async () => {
    const paid = await paidAndStored(2);
    const body = JSON.parse((await storedBody(paid[0]!.webhookId)).toString('utf8')) as Record<
      string,
      unknown
    >;
    const unknownId = 'ffffffffffffffffffffffff';
    await storeInboxRow(
      'batch-unknown',
      'st_a',
      Buffer.from(
        JSON.stringify({ ...body, all_svc_checkout_intent_id: unknownId, webhook_id: 'batch-unknown' }),
      ),
    );
    const reads = countingReads();

    const results = await processInboxBatch(reads.deps, ['batch-unknown', ...paid.map((p) => p.webhookId)]);
    expect(results.map((r) => (r.ok ? r.value.kind : r.error.name))).toEqual([
      'IntentReadRefusedError',
      'applied',
      'applied',
    ]);
    // Asked once: the refusal is handled without a second read.
    expect(reads.count(unknownId)).toBe(1);
    // Before: failed for good at once, the intent never tracked, so a payment learnt only by
    // this webhook was never booked. Now the poll sweeper polls it, and the job retries.
    expect(await inboxStatus('batch-unknown')).toEqual({ status: 'received', attempts: 1 });
    const tracked = await pipeline.db.execute<{ tracked_via: string }>(
      sql`select tracked_via from checkout_intents where id = ${unknownId}`,
    );
    expect(tracked.rows).toEqual([{ tracked_via: 'webhook' }]);
    for (const p of paid) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);

    // The job's last attempt fails it, with the finding for a person.
    const refused = results[0]!;
    if (refused.ok || !(refused.error instanceof IntentReadRefusedError))
      throw new Error('expected a refusal');
    expect(refused.error).toMatchObject({ code: 50001, attempts: 3, trackedIntent: unknownId });
    await failRefusedWebhook(pipeline.payments, refused.error, 3);
    const { rows } = await pipeline.db.execute<{ status: string; kind: string | null }>(sql`
      select w.status, f.kind from webhook_inbox w
      left join findings f on f.ref_type = 'webhook' and f.ref_id = w.webhook_id
      where w.webhook_id = 'batch-unknown'`);
    expect(rows).toEqual([{ status: 'failed', kind: 'webhook_for_unknown_intent' }]);
  }, 120_000);

  it('error: a read that waited for its batch does not override a newer CANCELED a poll recorded meanwhile', async () => {
    const paid = await paidAndStored(3);
    const [viaBatch, alone, other] = paid;
    const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n });
    const viaTrack = created.allsvc_checkout_intent_id;
    expect((await pipeline.sandbox.control(`/_sandbox/intents/${viaTrack}/pay`, {})).status).toBe(200);
    const raced = new Set([viaBatch!.intentId, alone!.intentId, viaTrack]);
    const sandboxClient = pipeline.payments.client('st_a');
    const deps = {
      ...pipeline.payments,
      client: () => ({
        ...sandboxClient,
        getCheckoutIntent: async (id: string) => {
          const read = await sandboxClient.getCheckoutIntent(id);
          if (raced.has(id)) {
            // While this CONFIRMED read waits for the rest of its batch, the service cancels the
            // intent and a poll records it.
            await sleep(5);
            const forced = await pipeline.sandbox.control(`/_sandbox/intents/${id}/status`, { status: -4 });
            expect(forced.status, JSON.stringify(forced.body)).toBe(200);
            const now = await sandboxClient.getCheckoutIntent(id);
            await pipeline.db.transaction((tx) =>
              applyIntentSnapshot(tx, pipeline.payments, {
                storeId: 'st_a',
                intent: now,
                source: 'poll',
                observedAt: pipeline.payments.clock.now(),
              }),
            );
            await sleep(5);
          }
          return read;
        },
      }),
    } as DomainContext;

    const results = await processInboxBatch(deps, [viaBatch!.webhookId, other!.webhookId]);
    expect(results.map((r) => (r.ok ? r.value.kind : r.error.message))).toEqual(['applied', 'applied']);
    await processInboxBatch(deps, [alone!.webhookId]);
    await trackIntent(deps, 'st_a', viaTrack);
    // Before: each read was stamped when it was applied, after the poll's, so the older CONFIRMED
    // won over the newer CANCELED and booked income for a cancelled intent.
    for (const id of raced) {
      const { rows } = await pipeline.db.execute<{ status: number }>(
        sql`select status from checkout_intents where id = ${id}`,
      );
      expect(rows, id).toEqual([{ status: -4 }]);
      expect(await ledgerLinesOf(pipeline.db, id), id).toEqual([]);
    }
    expect(await ledgerLinesOf(pipeline.db, other!.intentId)).toEqual(EXACT_LINES);
  }, 120_000);

  it('error: a poison webhook (a value PostgreSQL refuses, an intent the model refuses) fails alone with a finding and its intent tracked; the rest of its batch commits together, nothing read twice', async () => {
    const paid = await paidAndStored(5);
    const refusedByDb = paid[1]!;
    const refusedByModel = paid[3]!;
    const reads = countingReads((id, intent) => {
      // What the model now refuses (a currency above a PostgreSQL integer), as if it had let it
      // through: PostgreSQL refuses the row (22003) on every retry.
      if (id === refusedByDb.intentId) return { ...intent, currency: 3_000_000_000 };
      if (id === refusedByModel.intentId) {
        // As the client answers an intent the model refuses.
        throw new SvcProtocolError(
          'checkout_intents.get',
          200,
          'payload does not match the spec: currency: must be a Currency enum integer of at most 2^31 - 1',
          false,
        );
      }
      return intent;
    });
    const logsBefore = pipeline.logs.length;

    const results = await processInboxBatch(
      reads.deps,
      paid.map((p) => p.webhookId),
    );
    expect(results.map((r) => (r.ok ? r.value.kind : r.error.message))).toEqual([
      'applied',
      'unusable',
      'applied',
      'unusable',
      'applied',
    ]);
    for (const p of paid) expect(reads.count(p.intentId), p.intentId).toBe(1);
    const good = paid.filter((p) => p !== refusedByDb && p !== refusedByModel);
    for (const p of good) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
    // Together, not one by one: one transaction's start time (now()) on every row (xmin differs,
    // each webhook having been written under its own savepoint).
    const { rows: started } = await pipeline.db.execute<{ n: number }>(sql`
      select count(distinct updated_at)::int as n from checkout_intents
      where id = any(${sql.param(good.map((p) => p.intentId))}::text[])`);
    expect(started).toEqual([{ n: 1 }]);
    expect(pipeline.logs.slice(logsBefore).join('')).not.toContain('processing its webhooks one by one');

    // Before: left `received` with no finding and the intent untracked; the sweeper re-added it
    // every 30 s for ever, failing each batch it joined.
    for (const [poison, reason] of [
      [refusedByDb, /database refused a value: value "3000000000" is out of range for type integer/],
      [refusedByModel, /payload does not match the spec/],
    ] as const) {
      const { rows } = await pipeline.db.execute<{
        status: string;
        error: string;
        kind: string;
        severity: string;
        tracked_via: string | null;
        details: Record<string, unknown>;
      }>(sql`
        select w.status, w.error, f.kind, f.severity, f.details, c.tracked_via from webhook_inbox w
        join findings f on f.ref_type = 'webhook' and f.ref_id = w.webhook_id and f.resolved_at is null
        left join checkout_intents c on c.id = ${poison.intentId}
        where w.webhook_id = ${poison.webhookId}`);
      expect(rows).toEqual([
        {
          status: 'failed',
          error: expect.stringMatching(reason),
          kind: 'webhook_unprocessable',
          severity: 'critical',
          tracked_via: 'webhook',
          details: expect.objectContaining({ intent_id: poison.intentId, tracked_intent: poison.intentId }),
        },
      ]);
      expect(await ledgerLinesOf(pipeline.db, poison.intentId)).toEqual([]);
    }
    const stale = await staleTrackedIntents(pipeline.db, 60_000, new Date());
    expect(stale.map((i) => i.id)).toEqual(
      expect.arrayContaining([refusedByDb.intentId, refusedByModel.intentId]),
    );
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  }, 120_000);

  it('error: a 10001 on an intent read fails that webhook with a finding and tracks its intent; the others are applied', async () => {
    const paid = await paidAndStored(3);
    const faults = await pipeline.sandbox.control('/_sandbox/faults', {
      error_next: { code: 10001, count: 1 },
    });
    expect(faults.status).toBe(200);
    const results = await processInboxBatch(
      pipeline.payments,
      paid.map((p) => p.webhookId),
    );
    const kinds = results.map((r) => (r.ok ? r.value.kind : r.error.message));
    expect(kinds.filter((k) => k === 'applied')).toHaveLength(2);
    const i = kinds.findIndex((k) => k !== 'applied');
    expect(kinds[i]).toBe('unusable');
    const poison = paid[i]!;
    const { rows } = await pipeline.db.execute<{
      status: string;
      kind: string;
      tracked_via: string | null;
    }>(sql`
      select w.status, f.kind, c.tracked_via from webhook_inbox w
      join findings f on f.ref_type = 'webhook' and f.ref_id = w.webhook_id
      left join checkout_intents c on c.id = ${poison.intentId}
      where w.webhook_id = ${poison.webhookId}`);
    // Before: the job failed at once (UnrecoverableError) and the row stayed `received`, untracked.
    expect(rows).toEqual([{ status: 'failed', kind: 'webhook_unprocessable', tracked_via: 'webhook' }]);
    for (const p of paid.filter((x) => x !== poison))
      expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
  }, 120_000);

  it('error: a webhook the model refuses fails, and the intent it names is tracked for polling', async () => {
    const [paid] = await paidAndStored(1);
    const body = JSON.parse((await storedBody(paid!.webhookId)).toString('utf8')) as Record<string, unknown>;
    await storeInboxRow('batch-refused', 'st_a', Buffer.from(JSON.stringify({ ...body, status: 'paid' })));
    const [result] = await processInboxBatch(pipeline.payments, ['batch-refused']);
    expect(result?.ok && result.value.kind).toBe('unusable');
    const { rows } = await pipeline.db.execute<{ status: string }>(
      sql`select status from webhook_inbox where webhook_id = 'batch-refused'`,
    );
    expect(rows).toEqual([{ status: 'failed' }]);
    // Before: nothing tracked it, so a payment whose only webhook the model refused was never
    // learnt. Now it is tracked and never polled: the poll sweeper's first pick.
    const stale = await staleTrackedIntents(pipeline.db, 60_000, new Date());
    expect(stale.map((i) => i.id)).toContain(paid!.intentId);
    const tracked = await pipeline.db.execute<{ tracked_via: string; store_id: string }>(
      sql`select tracked_via, store_id from checkout_intents where id = ${paid!.intentId}`,
    );
    expect(tracked.rows).toEqual([{ tracked_via: 'webhook', store_id: 'st_a' }]);
  }, 120_000);

  it('error: a webhook of a store no longer configured fails its own job only', async () => {
    const paid = await paidAndStored(2);
    await storeInboxRow('batch-gone-store', 'st_gone', await storedBody(paid[0]!.webhookId));
    const deps = {
      ...pipeline.payments,
      client: (storeId: string) => {
        // As the daemon's deps do for a store missing from STORES_FILE.
        if (storeId !== 'st_a') throw new Error(`store ${storeId} is not in STORES_FILE`);
        return pipeline.payments.client(storeId);
      },
    };
    const results = await processInboxBatch(deps, [...paid.map((p) => p.webhookId), 'batch-gone-store']);
    expect(results.map((r) => (r.ok ? r.value.kind : r.error.message))).toEqual([
      'applied',
      'applied',
      'store st_gone is not in STORES_FILE',
    ]);
    for (const p of paid) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
  }, 120_000);

  it('error: a webhook that fails the batch fails alone; the others are applied one by one', async () => {
    const paid = await paidAndStored(4);
    const bad = paid[2]!;
    // The database refuses this intent's row (a trigger raising for its id): its statement fails,
    // and with it the batch's transaction.
    await pipeline.ownerDb.execute(
      sql.raw(`
      create or replace function test_refuse_intent() returns trigger language plpgsql as $$
      begin
        if new.id = '${bad.intentId}' then raise exception 'refused for the test'; end if;
        return new;
      end $$;
      create trigger test_refuse_intent before insert or update on checkout_intents
        for each row execute function test_refuse_intent();`),
    );
    onTestFinished(async () => {
      await pipeline.ownerDb.execute(sql`drop trigger if exists test_refuse_intent on checkout_intents`);
    });

    const results = await processInboxBatch(
      pipeline.payments,
      paid.map((p) => p.webhookId),
    );
    results.forEach((r, i) => {
      if (i === 2) {
        expect(r.ok).toBe(false);
        if (!r.ok) expect(`${r.error.message} ${String(r.error.cause)}`).toContain('refused for the test');
      } else {
        expect(r.ok && r.value.kind).toBe('applied');
      }
    });
    const good = paid.filter((p) => p !== bad);
    for (const p of good) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
    // Each good one in a transaction of its own (the batch's was rolled back).
    expect((await writers(good.map((p) => p.intentId))).size).toBe(good.length);
    const { rows } = await pipeline.db.execute<{ status: string }>(
      sql`select status from webhook_inbox where webhook_id = ${bad.webhookId}`,
    );
    expect(rows[0]?.status).toBe('received');
    expect(pipeline.logs.join('')).toContain('webhook batch failed; processing its webhooks one by one');
  }, 120_000);
  it('error: amounts changed since an intent was booked, in a batch: its deferred entry conflicts, the batch is applied one by one, the change is a critical finding and the others are booked once', async () => {
    const [booked, ...others] = await paidAndStored(3);
    await processInboxBatch(pipeline.payments, [booked!.webhookId]);
    expect(await ledgerLinesOf(pipeline.db, booked!.intentId)).toEqual(EXACT_LINES);
    // The service delivers it again and now reports other amounts (26 paid, 25.75 net).
    await storeInboxRow(`${booked!.webhookId}-again`, 'st_a', await storedBody(booked!.webhookId));
    const { deps } = countingReads((id, intent) =>
      id === booked!.intentId
        ? { ...intent, actual_paid_amount: '26', service_fee_amount: '0.25', net_income_amount: '25.75' }
        : intent,
    );
    const results = await processInboxBatch(deps, [
      `${booked!.webhookId}-again`,
      ...others.map((p) => p.webhookId),
    ]);
    expect(results.map((r) => (r.ok ? r.value.kind : 'error'))).toEqual(['applied', 'applied', 'applied']);
    expect(await ledgerLinesOf(pipeline.db, booked!.intentId)).toEqual(EXACT_LINES);
    const { rows } = await pipeline.db.execute<{ severity: string }>(sql`
      select severity from findings where ref_id = ${booked!.intentId} and kind = 'confirmed_amounts_changed'
        and resolved_at is null`);
    expect(rows).toEqual([{ severity: 'critical' }]);
    for (const p of others) expect(await ledgerLinesOf(pipeline.db, p.intentId)).toEqual(EXACT_LINES);
    const { rows: events } = await pipeline.db.execute<{ n: number }>(sql`
      select count(*)::int as n from event_outbox where type = 'payment.booked'
        and payload->>'intent_id' = any(${sql.param([booked!.intentId, ...others.map((p) => p.intentId)])}::text[])`);
    expect(events).toEqual([{ n: 3 }]);
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  }, 120_000);
});
