import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/runCli.ts';
import { createSuspenseKit, MERCHANT, STRANGER } from '../integration/suspense/suspenseKit.ts';

/**
 * `stablebooks adjust move|undo|list` and `rates supersede` on books the real settlement wrote:
 * intent ci_short asked 25 USDT and its one paying log carried 20 (rule 2 books 20, 5 stay in
 * in_transit, payment_amount_mismatch); intent ci_over asked 25 and got 30 (5 in suspense); a
 * stranger's 7 USDT is rule 9's (unmatched_transfer_in, no correction's kind).
 */
const kit = await createSuspenseKit('adjust_cli');
const short = await kit.transfer(STRANGER, MERCHANT, 20_000_000n);
const over = await kit.transfer(STRANGER, MERCHANT, 30_000_000n);
await kit.transfer(STRANGER, MERCHANT, 7_000_000n);
await kit.confirm('ci_short', short.txHash, '25');
await kit.confirm('ci_over', over.txHash, '25');
await kit.settle();
const env = { DATABASE_URL: kit.db.url };
const cli = (...args: string[]) => runCli(args, env);

async function findingId(kind: string, refId: string): Promise<string> {
  const { rows } = await kit.db.db.execute<{ id: string }>(
    sql`select id::text from findings where kind = ${kind} and ref_id = ${refId} order by id desc limit 1`,
  );
  if (!rows[0]) throw new Error(`no ${kind} finding of ${refId}`);
  return rows[0].id;
}

/** The intent's own balance of an account kind (what its entries leave there). */
async function intentBalance(intentId: string, kind: string): Promise<bigint> {
  const { rows } = await kit.db.db.execute<{ sum: string | null }>(sql`
    select sum(p.amount)::text as sum from ledger_entries e join ledger_postings p on p.entry_id = e.id
    join ledger_accounts a on a.id = p.account_id
    where e.ref_type = 'checkout_intent' and e.ref_id = ${intentId} and a.code like ${`${kind}:%`}`);
  return BigInt(rows[0]?.sum ?? '0');
}

async function state() {
  const { rows } = await kit.db.db.execute(sql`
    select (select count(*) from ledger_entries)::int as entries,
           (select count(*) from corrections)::int as corrections,
           (select count(*) from rate_supersessions)::int as supersessions,
           (select count(*) from findings where acked_at is not null)::int as acked`);
  return rows[0];
}

// Each run starts the real binary (a few seconds under tsx).
describe('stablebooks adjust', { timeout: 180_000 }, () => {
  it('behavior: the books as the rules left them: 5 in in_transit for ci_short, 5 in suspense for ci_over', async () => {
    expect(await intentBalance('ci_short', 'assets:in_transit')).toBe(5_000_000n);
    expect(await intentBalance('ci_over', 'assets:suspense')).toBe(-5_000_000n);
    expect((await cli('adjust', 'list')).stdout.trim()).toBe('no corrections');
  });

  it('behavior: move writes off the in_transit rest, shows in list, the report block and the exports; undo puts it back once', async () => {
    const finding = await findingId('payment_amount_mismatch', 'ci_short');
    const part = await cli(
      'adjust',
      'move',
      finding,
      '--to',
      'expense:sales_shortfall',
      '--amount',
      '2',
      '--note',
      'payer short by 5; 2 agreed as a discount',
      '--by',
      'alice',
    );
    expect(part.stderr).toBe('');
    expect(part.code).toBe(0);
    expect(part.stdout).toMatch(
      new RegExp(
        `^correction (\\d+): 2 USDT moved from assets:in_transit to expense:sales_shortfall \\(finding ${finding}, intent ci_short\\): entry \\d+; 3 USDT left; finding ${finding} acknowledged\\n$`,
      ),
    );
    const rest = await cli(
      'adjust',
      'move',
      finding,
      '--to',
      'expense:sales_shortfall',
      '--note',
      'the rest too',
    );
    expect(rest.code).toBe(0);
    expect(rest.stdout).toMatch(/: 3 USDT moved .*; 0 USDT left;/);
    expect(await intentBalance('ci_short', 'assets:in_transit')).toBe(0n);
    expect(await kit.balance('expense:sales_shortfall')).toBe(5_000_000n);
    expect(await kit.trialIsZero()).toBe(true);
    const { rows } = await kit.db.db.execute<{ ack_note: string; open: boolean }>(
      sql`select ack_note, resolved_at is null as open from findings where id = ${finding}::bigint`,
    );
    expect(rows[0]).toEqual({ ack_note: expect.stringMatching(/: the rest too$/), open: true });

    const list = JSON.parse((await cli('adjust', 'list', '--json')).stdout) as Array<Record<string, unknown>>;
    expect(list.map((c) => [c.amount, c.from_account, c.to_account, c.made_by, c.undone_at])).toEqual([
      ['2000000', 'assets:in_transit', 'expense:sales_shortfall', 'alice', null],
      ['3000000', 'assets:in_transit', 'expense:sales_shortfall', expect.any(String), null],
    ]);
    const first = String(list[0]?.id);

    const hledger = await cli('export', '--format', 'hledger');
    expect(hledger.code).toBe(0);
    expect(hledger.stdout).toMatch(
      /ci_short \| adjustment\.moved\n(\s+; .*\n)*\s+; memo: payer short by 5; 2 agreed/,
    );
    const beancount = await cli('export', '--format', 'beancount');
    expect(beancount.stdout).toMatch(/"adjustment\.moved" #adjustment\.moved/);
    expect(beancount.stdout).toContain('payer short by 5; 2 agreed as a discount');

    const { buildReport } = await import('../../src/recon/report/buildReport.ts');
    const report = await kit.db.db.transaction((tx) =>
      buildReport(tx, {
        period: { from: new Date(Date.now() - 86_400_000), to: new Date(Date.now() + 86_400_000) },
        storeId: 'st_a',
        chains: kit.registry,
        generatedAt: new Date(),
        checks: [],
        proofs: [],
        findingsFullList: null,
      }),
    );
    expect(report.corrections.map((c) => [c.id, c.amount, c.toAccount, c.note, c.madeBy])).toEqual([
      [first, '2', 'expense:sales_shortfall', 'payer short by 5; 2 agreed as a discount', 'alice'],
      [expect.any(String), '3', 'expense:sales_shortfall', 'the rest too', expect.any(String)],
    ]);

    const undo = await cli('adjust', 'undo', first, '--note', 'no discount after all', '--by', 'bob');
    expect(undo.code).toBe(0);
    expect(undo.stdout).toMatch(
      new RegExp(`^correction ${first} undone: reversal entry \\d+, 2 USDT back in assets:in_transit\\n$`),
    );
    expect(await intentBalance('ci_short', 'assets:in_transit')).toBe(2_000_000n);
    expect(await kit.balance('expense:sales_shortfall')).toBe(3_000_000n);
    const before = await state();
    const again = await cli('adjust', 'undo', first, '--note', 'twice', '--by', 'carol');
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      new RegExp(`^correction ${first} was already undone by bob at \\S+; nothing written\\n$`),
    );
    expect(await state()).toEqual(before);
    expect((await cli('adjust', 'list')).stdout).toMatch(/by bob: no discount after all/);
    expect(await kit.trialIsZero()).toBe(true);
  });

  it('behavior: the excess in suspense goes to customer overpayments; an in_transit-only account is refused for it', async () => {
    const finding = await findingId('payment_amount_mismatch', 'ci_over');
    const wrong = await cli('adjust', 'move', finding, '--to', 'expense:sales_shortfall', '--note', 'x');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(
      'stablebooks: --to: "expense:sales_shortfall" cannot take money held that nothing explains; use liability:customer_overpayments, liability:refunds_payable, income:other, equity:owner_contributions\n',
    );
    const run = await cli(
      'adjust',
      'move',
      finding,
      '--to',
      'liability:customer_overpayments',
      '--note',
      'owed back',
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/5 USDT moved from assets:suspense to liability:customer_overpayments/);
    expect(await intentBalance('ci_over', 'assets:suspense')).toBe(0n);
    expect(await kit.balance('liability:customer_overpayments')).toBe(-5_000_000n);
  });

  it('error: bad input is one line, non-zero, and writes nothing', async () => {
    const finding = await findingId('payment_amount_mismatch', 'ci_short');
    const { rows } = await kit.db.db.execute<{ id: string }>(
      sql`select id::text from findings where kind = 'unmatched_transfer_in' limit 1`,
    );
    const stray = rows[0]?.id ?? 'none';
    const before = await state();
    for (const [args, message] of [
      [
        ['adjust', 'move', '999999', '--to', 'income:other', '--note', 'x'],
        /^no finding 999999 \(see stablebooks findings list\)$/,
      ],
      [
        ['adjust', 'move', stray, '--to', 'income:other', '--note', 'x'],
        /^finding \d+ is unmatched_transfer_in; adjust move corrects only payment_amount_mismatch, proven_then_failed, confirmed_amounts_changed$/,
      ],
      [
        ['adjust', 'move', finding, '--to', 'assets:wallet', '--note', 'x'],
        /^--to: "assets:wallet" cannot take money the books expected/,
      ],
      [
        ['adjust', 'move', finding, '--to', 'expense:sales_shortfall', '--amount', '2.5', '--note', 'x'],
        /^--amount: 2\.5 USDT is more than the 2 USDT finding \d+ leaves in assets:in_transit$/,
      ],
      [
        ['adjust', 'move', finding, '--to', 'expense:sales_shortfall', '--amount', '1e3', '--note', 'x'],
        /^--amount: amount "1e3" is not a plain decimal string/,
      ],
      [
        [
          'adjust',
          'move',
          finding,
          '--to',
          'expense:sales_shortfall',
          '--amount',
          '0.0000001',
          '--note',
          'x',
        ],
        /^--amount: amount "0\.0000001" has more precision than the token's 6 decimals$/,
      ],
      [
        ['adjust', 'move', finding, '--to', 'expense:sales_shortfall', '--note', '  '],
        /^--note: must say something$/,
      ],
      [['adjust', 'undo', '424242', '--note', 'x'], /^no correction 424242 \(see stablebooks adjust list\)$/],
      [
        [
          'rates',
          'supersede',
          '--date',
          '2020-01-01',
          '--asset',
          'USDT',
          '--currency',
          'EUR',
          '--rate',
          '0.9',
          '--note',
          'x',
        ],
        /^no imported USDT rate in EUR on 2020-01-01 to supersede; import it with stablebooks rates import$/,
      ],
    ] as const) {
      const run = await cli(...args);
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr.split('\n'), args.join(' ')).toHaveLength(2);
      expect(run.stderr.replace(/^stablebooks: /, '').trim(), args.join(' ')).toMatch(message);
    }
    expect(await state()).toEqual(before);
  });
});

describe('stablebooks rates supersede', { timeout: 120_000 }, () => {
  it('behavior: a superseded rate revalues ledger balances --value, which names it and the imported one', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const { rows } = await kit.db.db.execute<{ day: string }>(sql`
      select distinct (occurred_at at time zone 'UTC')::date::text as day from ledger_entries order by 1`);
    const days = rows.map((r) => r.day);
    const file = join(mkdtempSync(join(tmpdir(), 'sb-rates-')), 'rates.csv');
    writeFileSync(file, `date,asset,currency,rate\n${days.map((d) => `${d},USDT,EUR,0.9`).join('\n')}\n`);
    expect((await cli('rates', 'import', file)).code).toBe(0);
    const wallet = async () => {
      const run = await cli('ledger', 'balances', '--value', 'EUR', '--store', 'st_a', '--json');
      const v = JSON.parse(run.stdout) as {
        accounts: { code: string; value: string | null }[];
        superseded_rates: { date: string; rate: string; imported: string; note: string; by: string }[];
      };
      return {
        value: v.accounts.find((a) => a.code.startsWith('assets:wallet:'))?.value,
        superseded: v.superseded_rates,
      };
    };
    // 20 + 30 + 7 = 57 USDT in the wallet.
    expect(await wallet()).toEqual({ value: '51.30', superseded: [] });
    for (const day of days) {
      const run = await cli(
        'rates',
        'supersede',
        '--date',
        day,
        '--asset',
        'USDT',
        '--currency',
        'EUR',
        '--rate',
        '0.8',
        '--note',
        'imported the USDC rate by mistake',
        '--by',
        'dana',
      );
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(
        /^the rate of USDT in EUR on \S+ is 0\.8 from now on \(was 0\.9\); supersession \d+\n$/,
      );
    }
    const after = await wallet();
    expect(after.value).toBe('45.60');
    expect(after.superseded.map((s) => [s.date, s.rate, s.imported, s.by, s.note])).toEqual(
      days.map((d) => [d, '0.8', '0.9', 'dana', 'imported the USDC rate by mistake']),
    );
    const text = await cli('ledger', 'balances', '--value', 'EUR', '--store', 'st_a');
    expect(text.stdout).toContain(
      `USDT rate in EUR on ${days[0]}: 0.8 (import (superseded), was 0.9; by dana at `,
    );
    const same = await cli(
      'rates',
      'supersede',
      '--date',
      days[0] as string,
      '--asset',
      'USDT',
      '--currency',
      'EUR',
      '--rate',
      '0.80',
      '--note',
      'again',
    );
    expect(same.stdout).toMatch(/is 0\.8 already; nothing written/);
    // Importing the original file again changes nothing: the imported rate is history, not replaced.
    expect((await cli('rates', 'import', file)).stdout).toMatch(/0 rates imported/);
    expect((await wallet()).value).toBe('45.60');
  });
});
