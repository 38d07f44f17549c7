import { mkdtempSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { readConditions } from '../../../src/alerts/evaluateAlerts.ts';
import { createManualClock } from '../../../src/clock.ts';
import { account } from '../../../src/ledger/accounts.ts';
import { chainHead } from '../../../src/ledger/chainHead.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { sealLedger } from '../../../src/ledger/sealLedger.ts';
import { verifyLedgerChain } from '../../../src/ledger/verifyLedgerChain.ts';
import { type ReconDeps, runReconciliation } from '../../../src/recon/runReconciliation.ts';
import { captureLogger } from '../../helpers/captureLogger.ts';
import { rewriteLedgerAsOwner } from '../../helpers/ownerRewrite.ts';
import { USDC_BASE } from '../../helpers/tokens.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * Every reconciliation run recomputes the entries' hash chain and prints its head; a rewrite by
 * the schema's owner (triggers off) is a critical finding of the next run, which alerts.
 */
const kit = await createIndexerKit('recon_chain');
const db = kit.db.db;
const clock = createManualClock(new Date());
const HOUR = 3_600_000;
const reportsDir = mkdtempSync(join(tmpdir(), 'sb-recon-chain-'));
const deps: ReconDeps = {
  db,
  config: {
    stores: kit.stores,
    chains: kit.registry,
    recon: { inTransitWindowMs: HOUR, webhookWindowMs: HOUR, stuckMs: 24 * HOUR, amountTolerance: 0n },
    reportsDir,
    refundGraceMs: 24 * HOUR,
  },
  rpcs: new Map([[CHAIN_ID, kit.deps().rpc]]),
  logger: captureLogger().logger,
  clock,
};

let n = 0;
async function post(): Promise<bigint> {
  n += 1;
  const posted = await postEntry(
    db,
    {
      idempotencyKey: `test:chain:${n}`,
      kind: 'checkout.confirmed',
      occurredAt: clock.now(),
      storeId: 'st_a',
      ref: { type: 'checkout_intent', id: `recon-chain-${n}` },
      lines: [
        { account: account('expense:service_fees', 'st_a', USDC_BASE), amount: 1_000_000n },
        { account: account('income:sales', 'st_a', USDC_BASE), amount: -1_000_000n },
      ],
    },
    { accounts: kit.accounts },
  );
  return posted.id;
}

const period = () => ({
  from: new Date(clock.now().getTime() - 24 * HOUR),
  to: new Date(clock.now().getTime() + HOUR),
});

async function dbNow(): Promise<Date> {
  const { rows } = await db.execute<{ now: Date }>(sql`select clock_timestamp() as now`);
  return new Date(rows[0]?.now ?? 0);
}

describe('reconciliation and the ledger hash chain', () => {
  it('behavior: a run verifies the chain and every report prints the head at the period end and when it was made', async () => {
    await post();
    await post();
    await post();
    await sealLedger(db);
    const first = await chainHead(db);
    const between = await dbNow();
    await new Promise((r) => setTimeout(r, 20));
    await post();
    await post();
    await sealLedger(db);
    const now = await chainHead(db);

    const run = await runReconciliation(deps, { period: { from: period().from, to: between } });
    const check = run.report.checks.find((c) => c.name === 'assertions.ledger_chain');
    expect(check).toMatchObject({ status: 'pass', count: 0, layer: 'assertions' });
    expect(check?.detail).toContain(`5 sealed entries recomputed, every hash matches; head 5:${now?.hash}`);
    expect(run.report.ledgerChain.atPeriodEnd).toMatchObject({ seq: '3', hash: first?.hash });
    expect(run.report.ledgerChain.atGeneration).toMatchObject({ seq: '5', hash: now?.hash });

    const json = JSON.parse(await readFile(join(run.dir, 'report.json'), 'utf8')) as {
      ledgerChain: { atPeriodEnd: { seq: string; hash: string } };
    };
    expect(json.ledgerChain.atPeriodEnd).toMatchObject({ seq: '3', hash: first?.hash });
    expect(await readFile(join(run.dir, 'report.md'), 'utf8')).toContain(
      `| end of period | 3 | \`${first?.hash}\``,
    );
    expect(await readFile(join(run.dir, 'report.html'), 'utf8')).toContain(first?.hash);
    expect(await readFile(join(run.dir, 'csv', 'ledger_chain.csv'), 'utf8')).toContain(
      `period_end,3,${first?.hash}`,
    );
  });

  it("behavior: the owner's rewrite with the triggers off is a critical ledger_chain_broken finding naming the first entry, the run fails and it alerts", async () => {
    const { rows } = await db.execute<{ entry_id: string }>(
      sql`select s.entry_id::text from ledger_seals s where s.seq = 1`,
    );
    const firstEntry = rows[0]?.entry_id;
    await rewriteLedgerAsOwner(kit.db.ownerUrl);

    const run = await runReconciliation(deps, { period: period() });
    expect(run.passed).toBe(false);
    expect(run.report.checks.find((c) => c.name === 'assertions.ledger_chain')).toMatchObject({
      status: 'fail',
      count: 1,
      detail: `seal 1 does not match: entry ${firstEntry} or its postings differ from what seal 1 covers`,
    });
    const found = await db.execute<{
      severity: string;
      ref_type: string;
      ref_id: string;
      details: Record<string, unknown>;
    }>(sql`
      select severity, ref_type, ref_id, details from findings where kind = 'ledger_chain_broken' and resolved_at is null`);
    expect(found.rows).toEqual([
      {
        severity: 'critical',
        ref_type: 'ledger_entry',
        ref_id: firstEntry,
        details: {
          seq: '1',
          entry_id: firstEntry,
          entry_kind: 'checkout.confirmed',
          entry_store_id: 'st_a',
          entry_ref_type: 'checkout_intent',
          entry_ref_id: 'recon-chain-1',
          reason: `entry ${firstEntry} or its postings differ from what seal 1 covers`,
        },
      },
    ]);
    const conditions = await readConditions(db, 100);
    expect(
      conditions.filter((c) => c.labels.kind === 'ledger_chain_broken').map((c) => [c.key, c.severity]),
    ).toEqual([[`finding:ledger_chain_broken:ledger_entry:${firstEntry}`, 'critical']]);
    expect(await readFile(join(run.dir, 'report.html'), 'utf8')).toContain(
      `hash chain breaks at seal 1 (entry ${firstEntry}, checkout.confirmed, checkout_intent recon-chain-1)`,
    );
  });

  it('behavior: an owner who also recomputes every seal after the rewrite is caught against the head the last run published', async () => {
    const published = await db.execute<{ seq: string; hash: string }>(sql`
      select counts->'ledger_chain'->>'seq' as seq, counts->'ledger_chain'->>'hash' as hash
      from recon_runs where status = 'completed' order by finished_at desc limit 1`);
    const head = published.rows[0];
    expect(head?.seq).toBe('5');
    const client = new pg.Client({ connectionString: kit.db.ownerUrl });
    await client.connect();
    await client.query(
      'begin; alter table ledger_seals disable trigger user; delete from ledger_seals; alter table ledger_seals enable trigger user; commit;',
    );
    await client.end();
    while ((await sealLedger(db)).sealed > 0);
    // The database is consistent again: the chain verifies on its own.
    expect((await verifyLedgerChain(db)).ok).toBe(true);

    const run = await runReconciliation(deps, { period: period() });
    expect(run.passed).toBe(false);
    const check = run.report.checks.find((c) => c.name === 'assertions.ledger_chain');
    expect(check?.status).toBe('fail');
    expect(check?.detail).toContain(`not the published 5:${head?.hash}`);
    const { rows } = await db.execute<{ ref_id: string }>(sql`
      select f.ref_id from findings f where f.kind = 'ledger_chain_broken' and f.resolved_at is null`);
    const fifth = await db.execute<{ entry_id: string }>(
      sql`select s.entry_id::text from ledger_seals s where s.seq = 5`,
    );
    expect(rows.map((r) => r.ref_id)).toEqual([fifth.rows[0]?.entry_id]);
  });
});
