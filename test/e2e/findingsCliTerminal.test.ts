import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { recordFinding } from '../../src/findings/recordFinding.ts';
import { runCli } from '../helpers/runCli.ts';
import { createMigratedDatabase } from '../helpers/testDatabase.ts';

/**
 * What the CLI prints cannot drive the terminal it prints to. A finding's ref id comes from
 * outside (an intent id, a webhook's field); one holding an OSC title change, BEL, a colour, the
 * one-byte C1 CSI and a right-to-left override is printed by the real `stablebooks` binary, as a
 * table, as JSON and as the line `findings ack` answers: no control character reaches stdout, and
 * the JSON still reads back to the stored value.
 */
const database = await createMigratedDatabase('findings_cli_terminal');
const env = { DATABASE_URL: database.url };
const HOSTILE = 'intent-\u001b]0;pwned\u0007\u001b[31mred\u009b2J\u202eevil\u007f\r\nforged line';
await recordFinding(
  database.db,
  {
    kind: 'payment_tx_reverted',
    severity: 'warning',
    ref: { type: 'checkout_intent', id: HOSTILE },
    details: {},
  },
  'st_\u001b[5mblink',
);
const { rows } = await database.db.execute<{ id: string }>(sql`select id::text as id from findings`);
const findingId = rows[0]!.id;

/** Characters a terminal acts on; a line break only where the CLI itself puts one. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for.
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('CLI: data cannot drive the terminal', () => {
  it('behavior: findings list prints the ref id with its control characters escaped, the table one row per finding', async () => {
    const run = await runCli(['findings', 'list'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(CONTROL);
    expect(run.stdout).toContain(
      'intent-\\x1b]0;pwned\\x07\\x1b[31mred\\x9b2J\\u202eevil\\x7f\\x0d\\x0aforged line',
    );
    // Header, rule and the one finding: the ref id's line break did not start a row of its own.
    expect(run.stdout.trimEnd().split('\n')).toHaveLength(3);
  });

  it('behavior: findings list --json escapes them too, and reads back to the stored ref id', async () => {
    const run = await runCli(['findings', 'list', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(CONTROL);
    const [finding] = JSON.parse(run.stdout) as Array<{ refId: string; storeId: string }>;
    expect(finding?.refId).toBe(HOSTILE);
    expect(finding?.storeId).toBe('st_\u001b[5mblink');
  });

  it('behavior: the line findings ack answers, with a note holding ESC, is escaped', async () => {
    const run = await runCli(['findings', 'ack', findingId, '--note', 'checked \u001b[2J by hand'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(CONTROL);
    expect(run.stdout).toContain('checked \\x1b[2J by hand');
  });
});
