import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_ROLES } from '../../src/daemon/roles.ts';
import { startDaemon } from '../../src/daemon/startDaemon.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { createIntent, trackIntent } from '../../src/payments/createIntent.ts';
import { CheckoutStatus } from '../../src/svc/models/checkoutStatus.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * Time passes on the sandbox's clock (docs/accounting.md, "Payments, payouts and the chain"): after 31 minutes of sandbox time the
 * unpaid intents time out, and the daemon, told to follow that clock, polls and records TIMEOUT
 * with no entry. Its signatures (requests and webhooks) keep working on the moved clock.
 */
const pipeline = await startPipeline();
const sandboxClock = pipeline.sandbox.world.clock;
const daemon = await startDaemon({
  config: pipeline.config,
  roles: ALL_ROLES,
  logger: pipeline.payments.logger,
  port: pipeline.config.port,
  host: '127.0.0.1',
  clock: sandboxClock,
  drainTimeoutMs: 10_000,
});
afterAll(() => daemon.stop(), 60_000);
/** Signs with the sandbox clock, so it stays valid after the clock moves. */
const client = pipeline.sandbox.client('st_a', { clock: sandboxClock, retry: { maxAttempts: 3 } });
const secret = pipeline.config.stores[0]!.apiSecret;

async function intentRow(id: string) {
  const { rows } = await pipeline.db.execute<{ status: number | null; settled_by: string | null }>(
    sql`select status, settled_by from checkout_intents where id = ${id}`,
  );
  return rows[0];
}

async function history(id: string) {
  const { rows } = await pipeline.db.execute<{ from: number | null; to: number; source: string }>(sql`
    select from_status as "from", to_status as "to", source
    from checkout_intent_status_history where intent_id = ${id} order by id`);
  return rows;
}

describe('payments timeout: the poller records TIMEOUT on the sandbox clock', () => {
  it('behavior: unpaid intents time out after 30 min of sandbox time, TIMEOUT recorded, no entry', async () => {
    const { created } = await createIntent(pipeline.payments, 'st_a', {
      stable_coin: 1,
      amount_cents: 2500n,
    });
    const viaCreate = created.allsvc_checkout_intent_id;
    const other = await client.createCheckoutIntent({ stable_coin: 2, amount_cents: 990n });
    const viaTrack = other.allsvc_checkout_intent_id;
    await trackIntent(pipeline.payments, 'st_a', viaTrack);
    // The poller has seen both CREATED before time moves.
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ n: number }>(sql`
        select count(*)::int as n from checkout_intents where id in (${viaCreate}, ${viaTrack}) and poll_count > 0`);
      return rows[0]?.n === 2;
    });

    const advanced = await pipeline.sandbox.control('/_sandbox/clock/advance', { seconds: 31 * 60 });
    expect(advanced.status).toBe(200);
    for (const [id, first] of [
      [viaCreate, 'create'],
      [viaTrack, 'track'],
    ] as const) {
      await pipeline.waitFor(async () => (await intentRow(id))?.status === CheckoutStatus.TIMEOUT);
      expect(await intentRow(id)).toEqual({ status: CheckoutStatus.TIMEOUT, settled_by: 'poll' });
      expect(await history(id)).toEqual([
        { from: null, to: CheckoutStatus.CREATED, source: first },
        { from: CheckoutStatus.CREATED, to: CheckoutStatus.TIMEOUT, source: 'poll' },
      ]);
      expect(await ledgerLinesOf(pipeline.db, id)).toEqual([]);
    }
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  });

  it('behavior: polling stops once TIMEOUT is recorded', async () => {
    const { rows: before } = await pipeline.db.execute<{ id: string; poll_count: number }>(
      sql`select id, poll_count from checkout_intents order by id`,
    );
    // Ten times the fastest poll interval of the harness (0.6 s).
    await new Promise((r) => setTimeout(r, 3_000));
    const { rows: after } = await pipeline.db.execute<{ id: string; poll_count: number }>(
      sql`select id, poll_count from checkout_intents order by id`,
    );
    expect(after).toEqual(before);
  });

  it('behavior: after the clock moved, a payment webhook still verifies and posts once', async () => {
    const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 4000n });
    const id = created.allsvc_checkout_intent_id;
    expect((await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, { route: 'direct' })).status).toBe(
      200,
    );
    const lines = await pipeline.waitFor(async () => {
      const found = await ledgerLinesOf(pipeline.db, id);
      return found.length > 0 ? found : undefined;
    });
    expect(lines).toEqual([
      'checkout.confirmed: assets:in_transit 40000000',
      'checkout.confirmed: income:sales -40000000',
    ]);
    expect(await intentRow(id)).toEqual({ status: CheckoutStatus.CONFIRMED, settled_by: 'webhook' });
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  });

  it('security: the store api_secret never appears in the daemon logs', () => {
    expect(pipeline.logs.length).toBeGreaterThan(0);
    expect(pipeline.logs.filter((line) => line.includes(secret))).toEqual([]);
  });
});
