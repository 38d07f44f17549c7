import { SQL, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/database.ts';
import { createPayout } from '../../../src/payouts/createPayout.ts';
import { PayoutConflictError, PayoutCreateError } from '../../../src/payouts/errors.ts';
import { findPayout } from '../../../src/payouts/payoutRecord.ts';
import { open } from '../../../src/payouts/secretBox.ts';
import { SvcTransportError } from '../../../src/svc/errors.ts';
import type { CreateClaimLinkResult } from '../../../src/svc/models/claimLink.ts';
import { FEE, ref, SEPOLIA, spyClient, startPayoutsWorld, untilLinkSent } from './payoutsKit.ts';

/**
 * createPayout against the real sandbox and PostgreSQL: the row before the call, exactly-once
 * funding and rule 5 under lost responses and retryable refusals, definitive refusals, and
 * reference_id reuse.
 */
const world = await startPayoutsWorld('payouts_create');
const { deps, db } = world;

const input = (referenceId: string, amount = '5.25') => ({
  storeId: 'st_a',
  amount,
  coin: 'USDT',
  chain: 'sepolia',
  referenceId,
});

async function entriesOf(claimLinkId: string) {
  const { rows } = await db.execute<{ kind: string; idempotency_key: string }>(
    sql`select kind, idempotency_key from ledger_entries where ref_id = ${claimLinkId} order by id`,
  );
  return rows;
}

async function openFindingsOf(claimLinkId: string) {
  const { rows } = await db.execute<{ kind: string }>(
    sql`select kind from findings where ref_id = ${claimLinkId} and resolved_at is null order by kind`,
  );
  return rows.map((r) => r.kind);
}

async function rowOf(referenceId: string) {
  const row = await findPayout(db, { storeId: 'st_a', referenceId });
  if (!row) throw new Error(`no payout ${referenceId}`);
  return row;
}

/**
 * deps.db with some of its calls held or failed: `transaction` rejects while `failTransaction`
 * says so (a PostgreSQL restart during the settle), `execute` of a statement containing
 * `holdText` waits for `hold` first.
 */
function wrappedDb(options: {
  failTransaction?: () => boolean;
  holdText?: string;
  hold?: () => Promise<void>;
}): Db {
  const dialect = new PgDialect();
  return new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'transaction') {
        return (...args: Parameters<Db['transaction']>) =>
          options.failTransaction?.()
            ? Promise.reject(new Error('Connection terminated unexpectedly'))
            : target.transaction(...args);
      }
      if (prop === 'execute' && options.holdText) {
        return async (query: SQL) => {
          if (query instanceof SQL && dialect.sqlToQuery(query).sql.includes(options.holdText ?? '')) {
            await options.hold?.();
          }
          return target.execute(query);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as Db;
}

/** A promise and the function that resolves it. */
function signal(): { done: Promise<void>; fire: () => void } {
  let fire = () => {};
  const done = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { done, fire };
}

describe('createPayout', () => {
  it('behavior: the row is pending before the answer; the funded link, sealed secrets and rule 5 commit together', async () => {
    const reference = ref();
    let during: Awaited<ReturnType<typeof rowOf>> | undefined;
    const spy = spyClient(world.plainClient(), async (request) => {
      during = await rowOf(reference);
      return world.plainClient().createClaimLinkAutoPayout(request);
    });
    world.useClient(spy);
    const before = await world.custodyBalance();
    try {
      const created = await createPayout(deps, input(reference));
      expect(during).toMatchObject({ createOutcome: 'pending', attempts: 1, claimLinkId: null });
      expect(created).toMatchObject({ called: true, idempotentHit: false });
      const row = await rowOf(reference);
      expect(row).toMatchObject({
        id: created.payout.id,
        createOutcome: 'created',
        amount: '5.25',
        coin: 'USDT',
        chainId: SEPOLIA,
        attempts: 1,
        idempotentHit: false,
        linkStatus: 'pending_deposit',
        lastError: null,
      });
      expect(row.id).toMatch(/^po_[0-9a-f]{24}$/);
      expect(row.fundingTxHash).toMatch(/^0x[0-9a-f]{64}$/);
      // The deps' clock is the sandbox's (which runs on, and tests move).
      const sinceFunded = world.sb.world.clock.now().getTime() - (row.fundedAt?.getTime() ?? 0);
      expect(sinceFunded).toBeGreaterThanOrEqual(0);
      expect(sinceFunded).toBeLessThan(5000);
      const url = open(deps.encryptionKey, row.claimUrlEnc ?? '');
      const token = open(deps.encryptionKey, row.claimTokenEnc ?? '');
      expect(url).toBe(`${world.sb.url}/claim/${token}`);
      expect((await fetch(url)).status).toBe(200);
      expect(await world.custodyBalance()).toBe(before - 5_250_000n - FEE);
      const id = row.claimLinkId ?? '';
      expect(await world.ledgerLines(id)).toEqual([
        'claim_link.funded: assets:claim_pool 5250000',
        'claim_link.funded: assets:custody -5250000',
      ]);
      expect(spy.creates).toEqual([
        {
          amount: '5.25',
          stable_coin: 1,
          chain: 11,
          receiver_email: null,
          sender_display_name: null,
          sender_message: null,
          reference_id: reference,
        },
      ]);

      // Running it again sends nothing and returns the same payout.
      const again = await createPayout(deps, input(reference, '5.250000'));
      expect(again).toMatchObject({ called: false, payout: { id: row.id, claimLinkId: id } });
      expect(spy.creates).toHaveLength(1);
    } finally {
      world.useClient(null);
    }
  });

  it('behavior: the first create times out after the service acted; the retry with the same reference_id is an idempotent hit, custody moves once', async () => {
    const reference = ref('timeout');
    const quick = world.plainClient({ timeouts: { claimLinkCreateMs: 1500 } });
    let during: Awaited<ReturnType<typeof rowOf>> | undefined;
    const spy = spyClient(world.plainClient(), async (request, call) => {
      if (call > 1) return world.plainClient().createClaimLinkAutoPayout(request);
      // The funding transfer waits for a block that does not come: the answer outlives the client's timeout.
      await world.automine(false);
      const answer = quick.createClaimLinkAutoPayout(request);
      try {
        await new Promise((r) => setTimeout(r, 500));
        during = await rowOf(reference);
        return await answer;
      } finally {
        await world.automine(true);
      }
    });
    world.useClient(spy);
    const before = await world.custodyBalance();
    try {
      const created = await createPayout(deps, input(reference, '7'));
      expect(during).toMatchObject({ createOutcome: 'pending', attempts: 1 });
      expect(created).toMatchObject({ called: true, idempotentHit: true });
      expect(spy.creates.map((r) => r.reference_id)).toEqual([reference, reference]);
      const row = await rowOf(reference);
      expect(row).toMatchObject({ createOutcome: 'created', attempts: 2, idempotentHit: true });
      // The token came only in the lost answer; the URL is rebuilt on replay; the hash was not repeated.
      expect(row.claimTokenEnc).toBeNull();
      expect(row.claimUrlEnc).not.toBeNull();
      expect(row.fundingTxHash).toBeNull();
      const id = row.claimLinkId ?? '';
      const links = (
        await world.sb.control<{ claim_links: Array<{ reference_id: string }> }>('/_sandbox/claim_links')
      ).body.claim_links;
      expect(links.filter((l) => l.reference_id === reference)).toHaveLength(1);
      expect(await world.custodyBalance()).toBe(before - 7_000_000n - FEE);
      expect(await entriesOf(id)).toEqual([
        { kind: 'claim_link.funded', idempotency_key: `claim_link:funded:${id}` },
      ]);
    } finally {
      world.useClient(null);
    }
  });

  it('behavior: 50103 signer_error is retried with the same reference_id and then funds once', async () => {
    const reference = ref('signer');
    await world.sb.control('/_sandbox/claim_links/fail_next', { reason_code: 'signer_error', count: 2 });
    const spy = spyClient(world.plainClient());
    world.useClient(spy);
    const before = await world.custodyBalance();
    try {
      const created = await createPayout(deps, input(reference, '1.5'));
      expect(created.idempotentHit).toBe(false);
      expect(spy.creates.map((r) => r.reference_id)).toEqual([reference, reference, reference]);
      const row = await rowOf(reference);
      expect(row).toMatchObject({ createOutcome: 'created', attempts: 3, lastError: null });
      expect(await world.custodyBalance()).toBe(before - 1_500_000n - FEE);
      expect(await entriesOf(row.claimLinkId ?? '')).toHaveLength(1);
    } finally {
      world.useClient(null);
    }
  });

  it('error: 50103 insufficient balance fails at once, nothing posted, nothing moved', async () => {
    const reference = ref('short');
    const spy = spyClient(world.plainClient());
    world.useClient(spy);
    const before = await world.custodyBalance();
    try {
      const err = await createPayout(deps, input(reference, '5000000')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PayoutCreateError);
      expect((err as PayoutCreateError).outcome).toBe('failed');
      expect((err as Error).message).toMatch(/service error 50103.*insufficient balance.*nothing was paid/);
      expect(spy.creates).toHaveLength(1);
      const row = await rowOf(reference);
      expect(row).toMatchObject({ createOutcome: 'failed', attempts: 1, claimLinkId: null });
      expect(row.lastError).toMatch(/50103.*insufficient balance/);
      expect(await world.custodyBalance()).toBe(before);
      const { rows } = await db.execute(
        sql`select 1 from ledger_entries where metadata->>'reference_id' = ${reference}`,
      );
      expect(rows).toHaveLength(0);
    } finally {
      world.useClient(null);
    }
  });

  it('error: the same reference_id with another amount names the conflict and sends nothing', async () => {
    const reference = ref('conflict');
    await createPayout(deps, input(reference, '2'));
    const spy = spyClient(world.plainClient());
    world.useClient(spy);
    try {
      const err = await createPayout(deps, { ...input(reference, '3'), senderName: 'Ann' }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PayoutConflictError);
      expect((err as Error).message).toMatch(
        new RegExp(
          `^reference_id ${reference} is already payout po_\\w+ with other parameters: amount was 2, now 3; sender_name was \\(none\\), now Ann;`,
        ),
      );
      expect(spy.creates).toHaveLength(0);
      expect((await rowOf(reference)).amount).toBe('2');
    } finally {
      world.useClient(null);
    }
  });

  it('behavior: still unknown after the retries (90000) is recorded unknown; running it again funds it', async () => {
    const reference = ref('unknown');
    await world.sb.control('/_sandbox/faults', { error_next: { code: 90000, count: 3 } });
    const err = await createPayout({ ...deps, createRetry: { maxAttempts: 3 } }, input(reference, '4')).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PayoutCreateError);
    expect((err as PayoutCreateError).outcome).toBe('unknown');
    expect((err as Error).message).toMatch(
      /outcome unknown after 3 attempt\(s\).*run the same command again/,
    );
    expect(await rowOf(reference)).toMatchObject({ createOutcome: 'unknown', attempts: 3 });
    expect((await rowOf(reference)).lastError).toMatch(/90000/);

    const resumed = await createPayout(deps, input(reference, '4'));
    expect(resumed).toMatchObject({ called: true, payout: { createOutcome: 'created', attempts: 4 } });
  });

  it('behavior: running a failed payout again makes it pending while the new call is in flight, then created', async () => {
    const reference = ref('failed-again');
    const spy = spyClient(world.plainClient(), async (request, call) => {
      if (call === 1) {
        await world.sb.control('/_sandbox/faults', { error_next: { code: 50103, count: 1 } });
        return world.plainClient().createClaimLinkAutoPayout(request);
      }
      // The second run's call: the row must no longer claim that nothing was paid.
      inFlight = (await rowOf(reference)).createOutcome;
      return world.plainClient().createClaimLinkAutoPayout(request);
    });
    let inFlight: string | undefined;
    world.useClient(spy);
    try {
      const err = await createPayout(deps, input(reference, '2')).catch((e: unknown) => e);
      expect((err as PayoutCreateError).outcome).toBe('failed');
      expect(await rowOf(reference)).toMatchObject({ createOutcome: 'failed', attempts: 1 });
      const again = await createPayout(deps, input(reference, '2'));
      // Before: 'failed' during the call, so a funding the chain side saw meanwhile (or after a
      // crash here) was booked as an owner withdrawal.
      expect(inFlight).toBe('pending');
      expect(again.payout).toMatchObject({ createOutcome: 'created', attempts: 2 });
      expect(await entriesOf(again.payout.claimLinkId ?? '')).toHaveLength(1);
    } finally {
      world.useClient(null);
    }
  });

  it('behavior: a timeout that may have funded the link, then a definite refusal (50103): unknown, not failed; running it again settles it once', async () => {
    const reference = ref('timeout-refused');
    const quick = world.plainClient({ timeouts: { claimLinkCreateMs: 1500 } });
    const refuseNext = () => world.sb.control('/_sandbox/faults', { error_next: { code: 50103, count: 1 } });
    const spy = spyClient(world.plainClient(), async (request, call) => {
      if (call === 1) {
        // The funding waits for a block: the service funds the link after the client gave up.
        await world.automine(false);
        try {
          return await quick.createClaimLinkAutoPayout(request);
        } finally {
          await world.automine(true);
        }
      }
      // The next answers are refusals, as when the first attempt spent the custody balance.
      if (call === 2 || call === 3) await refuseNext();
      return world.plainClient().createClaimLinkAutoPayout(request);
    });
    world.useClient(spy);
    const before = await world.custodyBalance();
    try {
      const err = await createPayout(deps, input(reference, '6')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PayoutCreateError);
      expect((err as PayoutCreateError).outcome).toBe('unknown');
      expect((err as Error).message).toMatch(
        /outcome unknown after 2 attempt\(s\).*50103.*run the same command again/,
      );
      expect(await rowOf(reference)).toMatchObject({
        createOutcome: 'unknown',
        attempts: 2,
        claimLinkId: null,
      });
      // The first attempt did fund it.
      expect(await world.custodyBalance()).toBe(before - 6_000_000n - FEE);

      // A run after an unknown one cannot learn from a refusal that nothing was paid either.
      const again = await createPayout(deps, input(reference, '6')).catch((e: unknown) => e);
      expect((again as PayoutCreateError).outcome).toBe('unknown');
      expect(await rowOf(reference)).toMatchObject({ createOutcome: 'unknown', attempts: 3 });

      // The run after that hears the service: an idempotent hit, rule 5 once, custody moved once.
      const resumed = await createPayout(deps, input(reference, '6'));
      expect(resumed).toMatchObject({
        called: true,
        idempotentHit: true,
        payout: { createOutcome: 'created' },
      });
      expect(await world.custodyBalance()).toBe(before - 6_000_000n - FEE);
      const id = (await rowOf(reference)).claimLinkId ?? '';
      expect(await entriesOf(id)).toEqual([
        { kind: 'claim_link.funded', idempotency_key: `claim_link:funded:${id}` },
      ]);
    } finally {
      world.useClient(null);
    }
  });

  it('error: bad input is refused before anything is recorded', async () => {
    const reference = ref('bad');
    await expect(createPayout(deps, input(reference, '1.1234567'))).rejects.toThrow(/more precision/);
    await expect(createPayout(deps, { ...input(reference), chain: 999 })).rejects.toThrow(
      /chain 999 is not in the chain registry/,
    );
    await expect(createPayout(deps, { ...input(reference), storeId: 'st_zz' })).rejects.toThrow(/st_zz/);
    expect(await findPayout(db, { storeId: 'st_a', referenceId: reference })).toBeUndefined();
  });
  it('behavior: the settle transaction fails once after the service funded the link: it is tried again from the answer in memory', async () => {
    const reference = ref('settle-once');
    let failures = 1;
    const flaky = { ...deps, db: wrappedDb({ failTransaction: () => failures-- > 0 }) };
    const spy = spyClient(world.plainClient());
    world.useClient(spy);
    const before = await world.custodyBalance();
    try {
      const created = await createPayout(flaky, input(reference, '1.75'));
      expect(created).toMatchObject({
        called: true,
        idempotentHit: false,
        payout: { createOutcome: 'created' },
      });
      expect(spy.creates).toHaveLength(1);
      const row = await rowOf(reference);
      expect(row).toMatchObject({ createOutcome: 'created', attempts: 1, lastError: null });
      expect(row.fundingTxHash).toMatch(/^0x[0-9a-f]{64}$/);
      expect(row.claimTokenEnc).not.toBeNull();
      expect(await world.custodyBalance()).toBe(before - 1_750_000n - FEE);
      expect(await entriesOf(row.claimLinkId ?? '')).toHaveLength(1);
    } finally {
      world.useClient(null);
    }
  });

  it("error: the settle transaction keeps failing after the service funded the link: unknown (exit 75), never a plain error; the next run settles it once with the first answer's hash and token", async () => {
    const reference = ref('settle-lost');
    let down = true;
    const flaky = { ...deps, db: wrappedDb({ failTransaction: () => down }) };
    const spy = spyClient(world.plainClient());
    world.useClient(spy);
    const before = await world.custodyBalance();
    try {
      const err = await createPayout(flaky, input(reference, '2.25')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PayoutCreateError);
      expect((err as PayoutCreateError).outcome).toBe('unknown');
      expect((err as Error).message).toMatch(
        /outcome unknown after 1 attempt\(s\) \(the funded link could not be recorded: Connection terminated unexpectedly\); run the same command again/,
      );
      const lost = await rowOf(reference);
      expect(lost).toMatchObject({ createOutcome: 'unknown', attempts: 1, claimLinkId: null });
      expect(lost.lastError).toMatch(/could not be recorded: Connection terminated unexpectedly/);
      // What only the first answer carries is kept for the run that settles it.
      expect(lost.fundingTxHash).toMatch(/^0x[0-9a-f]{64}$/);
      expect(lost.claimTokenEnc).not.toBeNull();
      expect(await world.custodyBalance()).toBe(before - 2_250_000n - FEE);

      down = false;
      const resumed = await createPayout(flaky, input(reference, '2.25'));
      expect(resumed).toMatchObject({
        called: true,
        idempotentHit: true,
        payout: { createOutcome: 'created' },
      });
      expect(spy.creates).toHaveLength(2);
      const row = await rowOf(reference);
      expect(row).toMatchObject({ attempts: 2, lastError: null, fundingTxHash: lost.fundingTxHash });
      const url = open(deps.encryptionKey, row.claimUrlEnc ?? '');
      expect(url).toBe(`${world.sb.url}/claim/${open(deps.encryptionKey, row.claimTokenEnc ?? '')}`);
      expect(await world.custodyBalance()).toBe(before - 2_250_000n - FEE);
      const id = row.claimLinkId ?? '';
      expect(await entriesOf(id)).toEqual([
        { kind: 'claim_link.funded', idempotency_key: `claim_link:funded:${id}` },
      ]);
    } finally {
      world.useClient(null);
    }
  });

  it("behavior: two runs of one reference_id, the replay settles first: the first answer's funding hash, amount and token are kept", async () => {
    const reference = ref('race');
    const inner = world.plainClient();
    const firstAnswered = signal();
    const releaseFirst = signal();
    let original: CreateClaimLinkResult | undefined;
    const spy = spyClient(inner, async (request, call) => {
      if (call === 1) {
        original = await inner.createClaimLinkAutoPayout(request);
        firstAnswered.fire();
        await releaseFirst.done;
        return original;
      }
      return inner.createClaimLinkAutoPayout(request);
    });
    world.useClient(spy);
    const before = await world.custodyBalance();
    try {
      const first = createPayout(deps, input(reference, '2.5'));
      await firstAnswered.done;
      const second = await createPayout(deps, input(reference, '2.5'));
      expect(second).toMatchObject({ called: true, idempotentHit: true });
      expect((await rowOf(reference)).fundingTxHash).toBeNull();
      releaseFirst.fire();
      const a = await first;
      expect(a).toMatchObject({ called: true, idempotentHit: false });
      expect(a.payout).toMatchObject({ fundingTxHash: original?.funding_tx_hash, hasClaimToken: true });
      const row = await rowOf(reference);
      expect(original?.funding_tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
      expect(row).toMatchObject({
        createOutcome: 'created',
        attempts: 2,
        fundingTxHash: original?.funding_tx_hash,
        fundedAmount: original?.funded_amount,
      });
      expect(open(deps.encryptionKey, row.claimTokenEnc ?? '')).toBe(original?.token);
      expect(await world.custodyBalance()).toBe(before - 2_500_000n - FEE);
      expect(await entriesOf(row.claimLinkId ?? '')).toHaveLength(1);
    } finally {
      world.useClient(null);
    }
  });

  it("error: a definite refusal while another run's attempt (counted after our snapshot) is in flight is unknown, not failed", async () => {
    const reference = ref('race-refused');
    const inner = world.plainClient();
    const bHeld = signal();
    const aCalled = signal();
    const bDone = signal();
    // Run B read the row before run A counted its attempt; B counts after A, then is refused.
    const clientB = spyClient(inner, async (request) => {
      await world.sb.control('/_sandbox/faults', { error_next: { code: 50103, count: 1 } });
      return inner.createClaimLinkAutoPayout(request);
    });
    const depsB = {
      ...deps,
      client: () => clientB,
      db: wrappedDb({
        holdText: 'attempts = attempts + 1',
        hold: async () => {
          bHeld.fire();
          await aCalled.done;
        },
      }),
    };
    const clientA = spyClient(inner, async (request) => {
      aCalled.fire();
      await bDone.done;
      return inner.createClaimLinkAutoPayout(request);
    });
    const runB = createPayout(depsB, input(reference, '1.25'))
      .catch((e: unknown) => e)
      .finally(() => bDone.fire());
    await bHeld.done;
    const runA = createPayout({ ...deps, client: () => clientA }, input(reference, '1.25'));
    const errB = await runB;
    expect(errB).toBeInstanceOf(PayoutCreateError);
    expect((errB as Error).message).toMatch(/50103/);
    expect((errB as PayoutCreateError).outcome).toBe('unknown');
    const a = await runA;
    expect(a).toMatchObject({ called: true, payout: { createOutcome: 'created', attempts: 2 } });
    expect(await entriesOf(a.payout.claimLinkId ?? '')).toHaveLength(1);
  });

  it('error: a definite refusal after another run counted its attempt behind ours is unknown, not failed', async () => {
    const reference = ref('race-refused-late');
    const inner = world.plainClient();
    const bCalled = signal();
    const aCalled = signal();
    const bDone = signal();
    // Run B counts first; run A counts while B's call is in flight; then B is refused.
    const clientB = spyClient(inner, async (request) => {
      bCalled.fire();
      await aCalled.done;
      await world.sb.control('/_sandbox/faults', { error_next: { code: 50103, count: 1 } });
      return inner.createClaimLinkAutoPayout(request);
    });
    const clientA = spyClient(inner, async (request) => {
      aCalled.fire();
      await bDone.done;
      return inner.createClaimLinkAutoPayout(request);
    });
    const runB = createPayout({ ...deps, client: () => clientB }, input(reference, '1.5'))
      .catch((e: unknown) => e)
      .finally(() => bDone.fire());
    await bCalled.done;
    const runA = createPayout({ ...deps, client: () => clientA }, input(reference, '1.5'));
    const errB = await runB;
    expect((errB as Error).message).toMatch(/50103/);
    expect((errB as PayoutCreateError).outcome).toBe('unknown');
    const a = await runA;
    expect(a).toMatchObject({ called: true, payout: { createOutcome: 'created', attempts: 2 } });
  });

  it('behavior: a late idempotent hit that says cancelled (cancelled at the service meanwhile) closes the link with rule 7', async () => {
    const reference = ref('replay-cancelled');
    const inner = world.plainClient();
    let claimLinkId = '';
    const spy = spyClient(inner, async (request, call) => {
      const answer = await inner.createClaimLinkAutoPayout(request);
      if (call > 1) return answer;
      // The service funded the link; its answer is lost.
      claimLinkId = answer.claim_link_id;
      throw new SvcTransportError('POST /v1/claim_link_auto_payouts', true, 'request timed out');
    });
    world.useClient(spy);
    try {
      const err = await createPayout(
        { ...deps, createRetry: { maxAttempts: 1 } },
        input(reference, '3.5'),
      ).catch((e: unknown) => e);
      expect((err as PayoutCreateError).outcome).toBe('unknown');
      await untilLinkSent(world, claimLinkId);
      await inner.cancelClaimLinkAutoPayout(claimLinkId);

      const resumed = await createPayout(deps, input(reference, '3.5'));
      expect(resumed).toMatchObject({ called: true, idempotentHit: true });
      const row = await rowOf(reference);
      expect(row).toMatchObject({ createOutcome: 'created', claimLinkId, linkStatus: 'cancelled' });
      // Learnt with the funding, in the same transaction.
      expect(row.cancelledAt?.getTime()).toBeGreaterThanOrEqual(row.fundedAt?.getTime() ?? Number.NaN);
      expect(resumed.payout.cancelledAt).toEqual(row.cancelledAt);
      expect(await world.ledgerLines(claimLinkId)).toEqual([
        'claim_link.funded: assets:claim_pool 3500000',
        'claim_link.funded: assets:custody -3500000',
        'claim_link.cancelled: assets:claim_pool -3500000',
        'claim_link.cancelled: assets:refund_receivable 3500000',
      ]);
      expect(await openFindingsOf(claimLinkId)).toEqual(['cancelled_outside_stablebooks']);
    } finally {
      world.useClient(null);
    }
  });

  it('behavior: a late idempotent hit that says claimed is a finding for a person, and recorded as what the service said, not as the claim', async () => {
    const reference = ref('replay-claimed');
    const inner = world.plainClient();
    let claimLinkId = '';
    const spy = spyClient(inner, async (request, call) => {
      const answer = await inner.createClaimLinkAutoPayout(request);
      if (call > 1) return answer;
      claimLinkId = answer.claim_link_id;
      throw new SvcTransportError('POST /v1/claim_link_auto_payouts', true, 'request timed out');
    });
    world.useClient(spy);
    try {
      await createPayout({ ...deps, createRetry: { maxAttempts: 1 } }, input(reference, '1')).catch(
        () => undefined,
      );
      await untilLinkSent(world, claimLinkId);
      await world.sb.control(`/_sandbox/claim_links/${claimLinkId}/claim`, {});
      await createPayout(deps, input(reference, '1'));
      const row = await rowOf(reference);
      expect(row).toMatchObject({
        createOutcome: 'created',
        claimLinkId,
        linkStatus: 'claimed',
        cancelledAt: null,
        claimedAt: null,
      });
      // The service's word is recorded (when we learnt it: funded_at); the claim waits for the chain.
      expect(row.claimedReportedAt).toEqual(row.fundedAt);
      expect(await openFindingsOf(claimLinkId)).toEqual(['claim_link_closed_on_replay']);
    } finally {
      world.useClient(null);
    }
  });
});
