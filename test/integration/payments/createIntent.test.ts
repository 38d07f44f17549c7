import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { DomainContext } from '../../../src/context/domainContext.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import { createLogger } from '../../../src/logging/logger.ts';
import { createIntent, IntentNotRecordedError, trackIntent } from '../../../src/payments/createIntent.ts';
import type { SvcClient } from '../../../src/svc/client.ts';
import { CheckoutStatus } from '../../../src/svc/models/checkoutStatus.ts';
import { startTestSandbox } from '../../helpers/sandboxHarness.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * createIntent once the service has created the intent: the statement that records `created` and
 * the tracking row meets a database that fails (a trigger raising a connection-failure error,
 * on real PostgreSQL; the sandbox creates the intent). A blip is retried; a failure that lasts is
 * an error naming the intent and the command that tracks it, and nothing is created twice.
 */
// ownerDb: the test's trigger is a schema change, which only the owner may make.
const { db, ownerDb } = await createMigratedDatabase('createintent');
const sandbox = await startTestSandbox();
const real = sandbox.client('st_a');
let creates = 0;
const client: SvcClient = {
  ...real,
  async createCheckoutIntent(request) {
    creates++;
    return real.createCheckoutIntent(request);
  },
};
const deps: DomainContext = {
  db,
  chains: createChainRegistry(),
  stores: [],
  accounts: createAccountCache(),
  encryptionKey: Buffer.alloc(32),
  client: () => client,
  clock: { now: () => new Date() },
  logger: createLogger({ level: 'silent' }),
};

/** The next `failures` inserts of a tracking row by create fail as a dropped connection would. */
async function failTrackingInserts(failures: number): Promise<void> {
  // security definer: the daemon's role, which fires the trigger, holds nothing on blip_seq.
  await ownerDb.execute(
    sql.raw(`
    drop sequence if exists blip_seq;
    create sequence blip_seq;
    create or replace function blip() returns trigger language plpgsql security definer as $$
    begin
      if new.tracked_via = 'create' and nextval('blip_seq') <= ${failures} then
        raise exception 'simulated: terminating connection due to administrator command' using errcode = '57P01';
      end if;
      return new;
    end $$;
    drop trigger if exists blip on checkout_intents;
    create trigger blip before insert on checkout_intents for each row execute function blip();`),
  );
}

async function healDatabase(): Promise<void> {
  await ownerDb.execute(sql.raw('drop trigger if exists blip on checkout_intents'));
}

async function creationOf(orderId: string) {
  const { rows } = await db.execute<{ outcome: string; intent_id: string | null }>(
    sql`select outcome, intent_id from checkout_intent_creations where order_id = ${orderId}`,
  );
  return rows;
}

async function trackedVia(id: string): Promise<string | undefined> {
  const { rows } = await db.execute<{ tracked_via: string }>(
    sql`select tracked_via from checkout_intents where id = ${id}`,
  );
  return rows[0]?.tracked_via;
}

describe('createIntent: recording what the service created', () => {
  it('behavior: a database blip while recording the created intent is retried: recorded and tracked, created once', async () => {
    await failTrackingInserts(2);
    try {
      creates = 0;
      const { created, applied } = await createIntent(deps, 'st_a', {
        stable_coin: 1,
        amount_cents: 2500n,
        order_id: 'blip-1',
      });
      const id = created.allsvc_checkout_intent_id;
      expect(creates).toBe(1);
      expect(await creationOf('blip-1')).toEqual([{ outcome: 'created', intent_id: id }]);
      expect(await trackedVia(id)).toBe('create');
      expect(applied?.status).toBe(CheckoutStatus.CREATED);
    } finally {
      await healDatabase();
    }
  });

  it('error: recording fails on every attempt: the error names the intent and how to track it; nothing is created twice', async () => {
    await failTrackingInserts(1_000);
    let err: unknown;
    try {
      creates = 0;
      err = await createIntent(deps, 'st_a', {
        stable_coin: 1,
        amount_cents: 2500n,
        order_id: 'blip-2',
      }).catch((e: unknown) => e);
    } finally {
      await healDatabase();
    }
    expect(err).toBeInstanceOf(IntentNotRecordedError);
    const notRecorded = err as IntentNotRecordedError;
    const id = notRecorded.intentId;
    expect(id).toMatch(/^[0-9a-f]{24}$/);
    expect(creates).toBe(1);
    expect(notRecorded.message).not.toContain('\n');
    expect(notRecorded.message).toContain(
      `intent ${id} was created at the service but could not be recorded`,
    );
    expect(notRecorded.message).toContain('terminating connection');
    expect(notRecorded.message).toContain(`stablebooks intents track ${id} --store st_a`);
    // The creation row keeps its `pending` (the statement never committed) and nothing is tracked.
    expect(await creationOf('blip-2')).toEqual([{ outcome: 'pending', intent_id: null }]);
    expect(await trackedVia(id)).toBeUndefined();

    // What the error says to run, once the database answers, tracks the one intent.
    const applied = await trackIntent(deps, 'st_a', id);
    expect(applied.status).toBe(CheckoutStatus.CREATED);
    expect(await trackedVia(id)).toBe('track');
    expect(creates).toBe(1);
  });

  it('error: a failure no retry helps (integrity violation) is not retried', async () => {
    await ownerDb.execute(
      sql.raw(`
      create or replace function blip() returns trigger language plpgsql security definer as $$
      begin
        if new.tracked_via = 'create' then
          perform nextval('blip_seq');
          raise exception 'simulated: check violation' using errcode = '23514';
        end if;
        return new;
      end $$;
      drop sequence if exists blip_seq;
      create sequence blip_seq;
      create trigger blip before insert on checkout_intents for each row execute function blip();`),
    );
    let err: unknown;
    try {
      err = await createIntent(deps, 'st_a', { stable_coin: 1, amount_cents: 2500n }).catch(
        (e: unknown) => e,
      );
    } finally {
      await healDatabase();
    }
    expect(err).toBeInstanceOf(IntentNotRecordedError);
    const { rows } = await ownerDb.execute<{ n: string }>(sql`select last_value::text as n from blip_seq`);
    expect(rows[0]?.n).toBe('1');
  });
});
