import { describe, expect, it } from 'vitest';
import { daemonEnvForConfig } from '../helpers/daemonProcess.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';
import { runCli } from '../helpers/runCli.ts';

/** `stablebooks payouts create|show|cancel`, the real binary against the sandbox and PostgreSQL. */
const pipeline = await startPipeline();
const env = daemonEnvForConfig(pipeline.config);
const reference = `cli-${Date.now().toString(36)}`;
const createArgs = (amount: string) => [
  'payouts',
  'create',
  '--store',
  'st_a',
  '--amount',
  amount,
  '--coin',
  'USDT',
  '--chain',
  'sepolia',
  '--reference-id',
  reference,
  '--sender-name',
  'Ann',
];

describe('stablebooks payouts', () => {
  it('behavior: create funds a link; show hides the claim URL unless --reveal; cancel closes it once', async () => {
    const created = await runCli([...createArgs('5.25'), '--json'], env);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const payout = JSON.parse(created.stdout) as Record<string, string | boolean>;
    expect(payout).toMatchObject({
      create_outcome: 'created',
      amount: '5.25',
      coin: 'USDT',
      chain_id: 11155111,
      reference_id: reference,
      sender_name: 'Ann',
      claim_url: '(hidden; --reveal)',
      claim_token: '(hidden; --reveal)',
      called: true,
      idempotent_hit: false,
    });
    expect(created.stdout).not.toContain('/claim/');
    const id = String(payout.id);
    const claimLinkId = String(payout.claim_link_id);
    expect(await ledgerLinesOf(pipeline.db, claimLinkId)).toEqual([
      'claim_link.funded: assets:claim_pool 5250000',
      'claim_link.funded: assets:custody -5250000',
    ]);

    const again = await runCli(createArgs('5.250'), env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(
      `payout ${id} was already created (nothing sent): claim link ${claimLinkId}`,
    );
    expect(again.stdout).toContain('claim URL:   (hidden; --reveal)');

    const shown = await runCli(['payouts', 'show', id], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(
      `payout ${id} (store st_a, reference_id ${reference}): created, 5.25 USDT`,
    );
    expect(shown.stdout).toContain('claim URL:   (hidden; --reveal)');
    expect(shown.stdout).toContain('claim token: (hidden; --reveal)');
    expect(shown.stdout).toMatch(/claim_link\.funded at/);
    expect(shown.stdout).toMatch(/assets:claim_pool:st_a:11155111:USDT\s+5\.25 USDT/);
    expect(shown.stdout).not.toContain('/claim/');

    const revealed = await runCli(['payouts', 'show', claimLinkId, '--reveal', '--json'], env);
    expect(revealed.code).toBe(0);
    const secret = (JSON.parse(revealed.stdout) as { payout: { claim_url: string; claim_token: string } })
      .payout;
    expect(secret.claim_url).toBe(`${pipeline.sandbox.url}/claim/${secret.claim_token}`);
    expect((await fetch(secret.claim_url)).status).toBe(200);
    expect(shown.stdout).not.toContain(secret.claim_token);
    expect(created.stdout).not.toContain(secret.claim_token);

    await pipeline.sandbox.control('/_sandbox/clock/advance', { seconds: 3 }); // the scanner: link_sent
    const cancelled = await runCli(['payouts', 'cancel', id], env);
    expect(cancelled.stderr).toBe('');
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toBe(
      `payout ${id}: claim link ${claimLinkId} cancelled; the refund to the custody wallet is pending\n`,
    );
    const repeat = await runCli(['payouts', 'cancel', claimLinkId, '--json'], env);
    expect(repeat.code).toBe(0);
    expect(JSON.parse(repeat.stdout)).toMatchObject({
      id,
      link_status: 'cancelled',
      already_cancelled: true,
    });
    expect(await ledgerLinesOf(pipeline.db, claimLinkId)).toEqual([
      'claim_link.funded: assets:claim_pool 5250000',
      'claim_link.funded: assets:custody -5250000',
      'claim_link.cancelled: assets:claim_pool -5250000',
      'claim_link.cancelled: assets:refund_receivable 5250000',
    ]);

    // The refund settles; its cancelled webhook reaches the daemon, which records the refund hash.
    await pipeline.startDaemon();
    await pipeline.sandbox.control('/_sandbox/clock/advance', { seconds: 6 });
    const refunded = await pipeline.waitFor(async () => {
      const run = await runCli(['payouts', 'show', id, '--json'], env);
      const p = (JSON.parse(run.stdout) as { payout: { refund_tx_hash: string | null } }).payout;
      return p.refund_tx_hash ?? undefined;
    }, 30_000);
    expect(refunded).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await ledgerLinesOf(pipeline.db, claimLinkId)).toHaveLength(4);
    expect(pipeline.logs.join('')).not.toContain(secret.claim_token);
  }, 90_000);

  it('error: bad input is one line, a non-zero exit, and changes nothing', async () => {
    const cases: Array<[string[], string]> = [
      [
        createArgs('5.1234567'),
        'stablebooks: amount "5.1234567" has more precision than the token\'s 6 decimals (USDT on chain 11155111); it is never rounded',
      ],
      [
        [...createArgs('1').slice(0, 6), '--coin', 'DAI', '--chain', 'sepolia', '--reference-id', 'x1'],
        'stablebooks: coin DAI is not USDT or USDC',
      ],
      [
        [...createArgs('1').slice(0, 6), '--coin', 'USDT', '--chain', 'solana', '--reference-id', 'x2'],
        expect.stringMatching(
          /^stablebooks: chain solana is not in the chain registry \(known: .*11155111 sepolia/,
        ) as never,
      ],
      [
        createArgs('6'),
        expect.stringMatching(
          new RegExp(
            `^stablebooks: reference_id ${reference} is already payout po_\\w+ with other parameters: amount was 5.25, now 6;`,
          ),
        ) as never,
      ],
      [
        ['payouts', 'show', 'po_nope'],
        expect.stringMatching(/^stablebooks: no payout or claim link po_nope is recorded/) as never,
      ],
      [
        ['payouts', 'cancel', 'po_nope'],
        expect.stringMatching(/^stablebooks: no payout or claim link po_nope/) as never,
      ],
    ];
    for (const [args, line] of cases) {
      const run = await runCli(args, env);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr.trim()).toEqual(line);
    }
  }, 60_000);

  it('error: a refused create (insufficient custody balance) says so and that nothing was paid', async () => {
    const run = await runCli(
      [
        'payouts',
        'create',
        '--store',
        'st_a',
        '--amount',
        '5000000',
        '--coin',
        'USDC',
        '--chain',
        '11155111',
        '--reference-id',
        `big-${reference}`,
      ],
      env,
    );
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /^stablebooks: payout po_\w+: the service refused it \(.*50103.*insufficient balance.*\); nothing was paid/,
    );
  }, 60_000);
});

describe('stablebooks payouts with CLOCK_URL', () => {
  it('behavior: create follows the sandbox clock a day ahead: signed with it and funded at its time', async () => {
    await pipeline.sandbox.control('/_sandbox/clock/advance', { seconds: 86_400 });
    const run = await runCli(
      [...createArgs('1').slice(0, -4), '--reference-id', `${reference}-clock`, '--json'],
      { ...env, CLOCK_URL: `${pipeline.sandbox.url}/_sandbox/clock` },
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const fundedAt = Date.parse(String((JSON.parse(run.stdout) as { funded_at: string }).funded_at));
    expect(Math.abs(fundedAt - pipeline.sandbox.world.clock.now().getTime())).toBeLessThan(60_000);
  }, 60_000);
});

describe('stablebooks payouts create when the outcome cannot be known', () => {
  it('error: a service that fails after receiving the call exits 75 and says to run the same command again', async () => {
    const { createServer } = await import('node:http');
    let calls = 0;
    const broken = createServer((req, res) => {
      calls++;
      req.resume();
      res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream exploded');
    });
    await new Promise<void>((r) => broken.listen(0, '127.0.0.1', r));
    try {
      const port = (broken.address() as { port: number }).port;
      const run = await runCli([...createArgs('1').slice(0, -4), '--reference-id', `${reference}-unknown`], {
        ...env,
        SVC_BASE_URL: `http://127.0.0.1:${port}`,
      });
      expect(run.code).toBe(75);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/again/i);
      expect(calls).toBeGreaterThan(1);
    } finally {
      await new Promise<void>((r) => broken.close(() => r()));
    }
  });
});
