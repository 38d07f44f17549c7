import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { daemonEnvForConfig } from '../helpers/daemonProcess.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';
import { runCli } from '../helpers/runCli.ts';

const pipeline = await startPipeline();
await pipeline.startDaemon();
const env = daemonEnvForConfig(pipeline.config);

describe('stablebooks intents', () => {
  it('behavior: create tracks the intent; with its webhook dropped, polling finds the payment; show prints it all', async () => {
    const created = await runCli(
      [
        'intents',
        'create',
        '--store',
        'st_a',
        '--amount',
        '12.50',
        '--coin',
        'USDT',
        '--order-id',
        'o-77',
        '--json',
      ],
      env,
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const id = (JSON.parse(created.stdout) as { allsvc_checkout_intent_id: string })
      .allsvc_checkout_intent_id;
    expect(id).toMatch(/^[0-9a-f]{24}$/);

    await pipeline.sandbox.control('/_sandbox/faults', { webhooks: { drop_next: 1 } });
    expect((await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, { route: 'direct' })).status).toBe(
      200,
    );
    const lines = await pipeline.waitFor(async () => {
      const l = await ledgerLinesOf(pipeline.db, id);
      return l.length > 0 ? l : undefined;
    }, 30_000);
    expect(lines).toEqual([
      'checkout.confirmed: assets:in_transit 12500000',
      'checkout.confirmed: income:sales -12500000',
    ]);

    const shown = await runCli(['intents', 'show', id], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/CONFIRMED/);
    expect(shown.stdout).toMatch(/\(new\) -> CREATED\s+\(create\)/);
    expect(shown.stdout).toMatch(/-> CONFIRMED\s+\(poll\)/);
    expect(shown.stdout).toMatch(/income:sales:st_a:11155111:USDT\s+-12\.5 USDT/);
    expect(shown.stdout).toMatch(/settled by poll/);
  }, 60_000);

  it('behavior: track registers an intent created elsewhere', async () => {
    const created = await pipeline.sandbox
      .client('st_a')
      .createCheckoutIntent({ currency: 44, amount_cents: 1999n });
    const run = await runCli(['intents', 'track', created.allsvc_checkout_intent_id, '--store', 'st_a'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`tracking ${created.allsvc_checkout_intent_id}: CREATED\n`);
  });

  it('error: bad input is one line and changes nothing', async () => {
    const both = await runCli(
      ['intents', 'create', '--store', 'st_a', '--amount', '1', '--coin', 'USDT', '--currency', 'USD'],
      env,
    );
    expect(both.code).toBe(1);
    expect(both.stderr.trim()).toBe('stablebooks: give exactly one of --currency or --coin');
    const floor = await runCli(
      ['intents', 'create', '--store', 'st_a', '--amount', '0.10', '--coin', 'USDC'],
      env,
    );
    expect(floor.code).toBe(1);
    expect(floor.stderr).toMatch(/50002.*amount must be greater than 0.1 USDC/);
    const unknown = await runCli(['intents', 'show', 'nope'], env);
    expect(unknown.stderr.trim()).toBe(
      'stablebooks: intent nope is not tracked (track it with: stablebooks intents track nope --store S)',
    );
  });

  it('error: the service created the intent but it could not be recorded: one line naming it and the track command, exit 75; tracking it then works', async () => {
    // Every tracking row that create inserts fails, as with a database that keeps dropping the connection.
    await pipeline.ownerDb.execute(
      sql.raw(`
      create or replace function cli_blip() returns trigger language plpgsql as $$
      begin
        if new.tracked_via = 'create' then
          raise exception 'simulated: terminating connection due to administrator command' using errcode = '57P01';
        end if;
        return new;
      end $$;
      create trigger cli_blip before insert on checkout_intents for each row execute function cli_blip();`),
    );
    let run: Awaited<ReturnType<typeof runCli>>;
    try {
      run = await runCli(
        [
          'intents',
          'create',
          '--store',
          'st_a',
          '--amount',
          '3.00',
          '--coin',
          'USDT',
          '--order-id',
          'o-blip',
        ],
        env,
      );
    } finally {
      await pipeline.ownerDb.execute(sql.raw('drop trigger cli_blip on checkout_intents'));
    }
    expect(run.code).toBe(75);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    const id = /intent ([0-9a-f]{24}) was created at the service but could not be recorded/.exec(
      lines[0] ?? '',
    )?.[1];
    expect(id, run.stderr).toBeDefined();
    expect(lines[0]).toContain(
      `do not create it again: once the database answers, run: stablebooks intents track ${id} --store st_a`,
    );

    const tracked = await runCli(['intents', 'track', id!, '--store', 'st_a'], env);
    expect(tracked.code).toBe(0);
    expect(tracked.stdout).toBe(`tracking ${id}: CREATED\n`);
  });
});
