import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/runCli.ts';
import { CUSTODY, createSuspenseKit, MERCHANT, STRANGER } from '../integration/suspense/suspenseKit.ts';

/**
 * `stablebooks suspense list|classify|unclassify` on a database the real settlement booked: the
 * owner's top-up of the custody wallet and a stranger's transfer into the merchant wallet, both in
 * suspense (rule 9).
 */
const kit = await createSuspenseKit('suspense_cli');
const topUp = await kit.transfer(STRANGER, CUSTODY, 1_000_000_000_000n);
const stray = await kit.transfer(STRANGER, MERCHANT, 12_340_000n);
await kit.settle();
const env = { DATABASE_URL: kit.db.url };
const cli = (...args: string[]) => runCli(['suspense', ...args], env);

// Each run starts the real binary (a few seconds under tsx).
describe('stablebooks suspense', { timeout: 120_000 }, () => {
  it('behavior: list shows each unclassified item with its transfer, wallet, store, amount and finding', async () => {
    const run = await cli('list');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`${topUp.txHash}:0`);
    expect(run.stdout).toMatch(new RegExp(`1000000 USDT\\s+${CUSTODY} \\(custody\\)\\s+st_a`));
    expect(run.stdout).toMatch(new RegExp(`12\\.34 USDT\\s+${MERCHANT} \\(merchant\\)\\s+st_a`));
    const json = JSON.parse((await cli('list', '--store', 'st_a', '--json')).stdout) as Array<{
      transfer_id: string;
      amount: string;
      finding_id: string | null;
      classification: unknown;
    }>;
    expect(json.map((i) => [i.transfer_id, i.amount, i.classification])).toEqual([
      [topUp.id, '1000000000000', null],
      [stray.id, '12340000', null],
    ]);
    expect(json.every((i) => i.finding_id !== null)).toBe(true);
    expect((await cli('list', '--store', 'st_other')).stdout.trim()).toBe('nothing unclassified in suspense');
  });

  it('behavior: classify moves the item out of suspense once; list --all shows who and why; unclassify puts it back', async () => {
    const run = await cli(
      'classify',
      `${topUp.txHash}:0`,
      '--as',
      'owner_contribution',
      '--note',
      'initial funding',
      '--by',
      'alice',
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(
        `^transfer ${topUp.id} \\(entry \\d+, 1000000 USDT\\) classified as owner_contribution: entry \\d+, finding \\d+ resolved\\n$`,
      ),
    );
    expect(await kit.balance('equity:owner_contributions')).toBe(-1_000_000_000_000n);
    expect(await kit.balance('assets:suspense')).toBe(-12_340_000n);

    const again = await cli(
      'classify',
      topUp.id,
      '--as',
      'owner_contribution',
      '--note',
      'again',
      '--by',
      'bob',
    );
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /was already classified as owner_contribution by alice at .*; nothing booked\n$/,
    );
    const other = await cli('classify', topUp.id, '--as', 'income_other', '--note', 'no');
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(
      /^stablebooks: transfer .* is already classified as owner_contribution by alice at \S+; unclassify it first\n$/,
    );
    expect(await kit.balance('equity:owner_contributions')).toBe(-1_000_000_000_000n);

    expect((await cli('list')).stdout).not.toContain(topUp.txHash);
    const all = await cli('list', '--all');
    expect(all.stdout).toMatch(/owner_contribution\s+alice\s+\S+\s+initial funding/);
    expect(all.stdout).toMatch(/unclassified/);

    const undo = await cli('unclassify', topUp.id, '--note', 'not the owner after all', '--by', 'carol');
    expect(undo.code).toBe(0);
    expect(undo.stdout).toMatch(
      /unclassified \(was owner_contribution\): reversal entry \d+, back in suspense, finding \d+ open\n$/,
    );
    expect(await kit.balance('equity:owner_contributions')).toBe(0n);
    expect(await kit.balance('assets:suspense')).toBe(-1_000_012_340_000n);
    expect(await kit.trialIsZero()).toBe(true);
  });

  it('error: a bad --as, an unknown item, a missing note: one line, non-zero, nothing changed', async () => {
    const before = await kit.state();
    const badAs = await cli('classify', stray.id, '--as', 'gift', '--note', 'x');
    expect(badAs.code).toBe(1);
    expect(badAs.stderr).toBe(
      'stablebooks: --as: "gift" is not one of owner_contribution, owner_withdrawal, refund_due, income_other\n',
    );
    const unknown = await cli('classify', `${'0x'}${'ab'.repeat(32)}:3`, '--as', 'refund_due', '--note', 'x');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /^stablebooks: no item in suspense matches "0xabab.*:3" \(see stablebooks suspense list --all\)\n$/,
    );
    const noNote = await cli('classify', stray.id, '--as', 'refund_due');
    expect(noNote.code).toBe(2);
    expect(noNote.stderr.split('\n')).toHaveLength(2);
    const wrongWay = await cli('classify', stray.id, '--as', 'owner_withdrawal', '--note', 'x');
    expect(wrongWay.stderr).toMatch(
      /owner_withdrawal cannot explain money into a wallet; use owner_contribution, refund_due, income_other\n$/,
    );
    const notClassified = await cli('unclassify', stray.id, '--note', 'x');
    expect(notClassified.stderr).toMatch(/is not classified; nothing to undo\n$/);
    expect(await kit.state()).toEqual(before);
  });
});
