import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { processInboxWebhook } from '../../../src/inbox/processInboxWebhook.ts';
import { cancelPayout } from '../../../src/payouts/cancelPayout.ts';
import { createPayout } from '../../../src/payouts/createPayout.ts';
import { expireClaimLinks } from '../../../src/payouts/expireClaimLinks.ts';
import { refundsOverdue } from '../../../src/payouts/refundsOverdue.ts';
import { HIDDEN, showPayout } from '../../../src/payouts/showPayout.ts';
import { eventually } from '../sandbox/claimLinkTestKit.ts';
import { ref, startPayoutsWorld, untilLinkSent } from './payoutsKit.ts';

/**
 * The claim URL and token are bearer secrets: after a whole lifecycle (create with a retried
 * refusal, show, reveal, cancel, webhook, expiry, overdue refunds, a failed create) they appear in
 * no log line and nowhere in the database in clear, in any column of any table.
 */
const world = await startPayoutsWorld('payouts_secrets');
const { deps, db } = world;

/** Where `needle` occurs in clear in the database: `table.column` of every text, json and bytea column. */
async function whereInDatabase(needle: string): Promise<string[]> {
  const { rows: columns } = await db.execute<{
    table_schema: string;
    table_name: string;
    column_name: string;
    data_type: string;
  }>(sql`
    select c.table_schema, c.table_name, c.column_name, c.data_type
    from information_schema.columns c join information_schema.tables t
      on t.table_schema = c.table_schema and t.table_name = c.table_name and t.table_type = 'BASE TABLE'
    where c.table_schema not in ('pg_catalog', 'information_schema')
      and c.data_type in ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea', 'ARRAY')`);
  expect(columns.length).toBeGreaterThan(20);
  const found: string[] = [];
  for (const c of columns) {
    const table = sql`${sql.identifier(c.table_schema)}.${sql.identifier(c.table_name)}`;
    const column = sql.identifier(c.column_name);
    const hit =
      c.data_type === 'bytea'
        ? sql`position(convert_to(${needle}, 'UTF8') in ${column}) > 0`
        : sql`strpos(${column}::text, ${needle}) > 0`;
    const { rows } = await db.execute<{ n: string }>(
      sql`select count(*)::text as n from ${table} where ${hit}`,
    );
    if (rows[0]?.n !== '0') found.push(`${c.table_schema}.${c.table_name}.${c.column_name}`);
  }
  return found;
}

describe('claim-link secrets', () => {
  it('behavior: the claim URL and token reach no log line and no database column in clear', async () => {
    await world.sb.control('/_sandbox/claim_links/fail_next', { reason_code: 'signer_error' });
    const reference = ref('secret');
    const created = await createPayout(deps, {
      storeId: 'st_a',
      amount: '6.5',
      coin: 'USDT',
      chain: 'sepolia',
      referenceId: reference,
      receiverEmail: 'ann@example.com',
      senderMessage: 'for you',
    });
    const id = created.payout.id;
    const claimLinkId = created.payout.claimLinkId ?? '';

    const hidden = await showPayout(deps, id);
    expect(hidden.payout.claim_url).toBe(HIDDEN);
    expect(hidden.payout.claim_token).toBe(HIDDEN);
    const revealed = await showPayout(deps, claimLinkId, { reveal: true });
    const url = revealed.payout.claim_url ?? '';
    const token = revealed.payout.claim_token ?? '';
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(url).toBe(`${world.sb.url}/claim/${token}`);
    expect(revealed.entries.map((e) => e.kind)).toEqual(['claim_link.funded']);

    await untilLinkSent(world, claimLinkId);
    await cancelPayout(deps, id);
    await world.advance(6);
    const hook = await eventually(async () =>
      world.webhooks.received.find((h) => h.body.includes(claimLinkId)),
    );
    const webhookId = hook.headers['x-webhook-id'] ?? '';
    await db.execute(sql`
      insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body)
      values (${webhookId}, 'st_a', 'claim-links', 'received', ${JSON.stringify(hook.headers)}::jsonb, ${Buffer.from(hook.body)})`);
    expect((await processInboxWebhook(deps, webhookId)).kind).toBe('claim_link_applied');
    await expireClaimLinks(deps, new Date(world.sb.world.clock.now().getTime() + 15 * 86_400_000));
    await refundsOverdue(
      { ...deps, refundGraceMs: 1 },
      new Date(world.sb.world.clock.now().getTime() + 86_400_000),
    );
    await createPayout(deps, {
      storeId: 'st_a',
      amount: '9000000',
      coin: 'USDT',
      chain: 'sepolia',
      referenceId: ref(),
    }).catch(() => undefined);

    // Whatever logs them later, by mistake, under any key or inside a message, they are scrubbed.
    deps.logger.info({ result: { token, claim_url: url }, note: token, link: url }, 'an accidental log');
    deps.logger.warn(`accidental: ${JSON.stringify({ token, url })}`);
    deps.logger.error({ err: new Error(`upstream echoed ${token} at ${url}`) }, 'failure');

    const logs = world.logs.join('');
    expect(logs).toContain('claim link created and funded');
    expect(logs).toContain('claim-link create: retrying with the same reference_id');
    expect(logs).toContain('an accidental log');
    expect(logs).not.toContain(token);
    expect(logs).not.toContain(url);

    expect(await whereInDatabase(reference)).toContain('public.payouts.reference_id');
    expect(await whereInDatabase(token)).toEqual([]);
    expect(await whereInDatabase(url)).toEqual([]);
    expect(await whereInDatabase(`/claim/${token.slice(0, 16)}`)).toEqual([]);
  });
});
