import { sql } from 'drizzle-orm';
import { createWalletClient, http, parseEventLogs } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { createChainRpcs } from '../../src/chain/rpcClients.ts';
import { rawRpc } from '../../src/devservices/anvil.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { createIntent } from '../../src/payments/createIntent.ts';
import { proveBalances } from '../../src/recon/balanceProofs.ts';
import {
  sandboxTokenAbi,
  sandboxTokenBytecode,
} from '../../src/sandbox/chain/contracts/sandboxTokenArtifact.ts';
import { CheckoutStatus } from '../../src/svc/models/checkoutStatus.ts';
import { daemonEnvForConfig } from '../helpers/daemonProcess.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';
import { runCli } from '../helpers/runCli.ts';

/**
 * The chain proves what the service says (docs/accounting.md), end to end: the sandbox on
 * anvil, the daemon with every role in-process (indexer, matching, proofs), real PostgreSQL and
 * Redis. Finality is 2 blocks deep on the sandbox chain; tests mine blocks to reach it.
 */
const pipeline = await startPipeline({ finalityDepth: 2 });
await pipeline.startDaemon();
const client = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 3 } });
const chain = [...pipeline.sandbox.world.chains.values()][0]!;
const merchant = (await chain.wallet('merchant:st_a')).toLowerCase();
const rpcs = createChainRpcs(pipeline.config, createMetrics());

const rpc = <T = unknown>(method: string, params: unknown[]) => rawRpc<T>(chain.rpcUrl, method, params);

const mine = (blocks: number) => rpc('anvil_mine', [`0x${blocks.toString(16)}`]);

async function pay(id: string, body: Record<string, unknown>): Promise<void> {
  const res = await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function newIntent(): Promise<string> {
  const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n });
  return created.allsvc_checkout_intent_id;
}

async function waitForConfirmed(id: string): Promise<void> {
  await pipeline.waitFor(async () => {
    const { rows } = await pipeline.db.execute<{ status: number | null }>(
      sql`select status from checkout_intents where id = ${id}`,
    );
    return rows[0]?.status === CheckoutStatus.CONFIRMED;
  });
}

/** Waits until the intent has `n` entries of `kind`, then returns all its ledger lines. */
async function linesOnceCounted(id: string, kind: string, n: number): Promise<string[]> {
  return pipeline.waitFor(async () => {
    const { rows } = await pipeline.db.execute<{ n: string }>(
      sql`select count(*)::text as n from ledger_entries where ref_id = ${id} and kind = ${kind}`,
    );
    return Number(rows[0]?.n) === n ? ledgerLinesOf(pipeline.db, id) : undefined;
  }, 30_000);
}

async function expectProofsHold(): Promise<void> {
  // Everything final is matched once the indexer has passed the head: wait for that, then prove.
  const proofs = await pipeline.waitFor(async () => {
    const all = await proveBalances({ db: pipeline.db, config: pipeline.config, rpcs });
    return all.every((p) => p.ok === true) ? all : undefined;
  }, 30_000);
  expect(proofs.map((p) => `${p.role} ${p.symbol}`).sort()).toEqual([
    'custody USDC',
    'custody USDT',
    'merchant USDC',
    'merchant USDT',
  ]);
  for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
}

describe('chain: every confirmed payment is proven by its transfer into the merchant wallet (rule 2)', () => {
  const cases: Array<[string, Record<string, unknown>, bigint]> = [
    ['exact, through the temporary wallet', { route: 'temp_wallet' }, 24_750_000n],
    ['exact, paid directly', { route: 'direct' }, 25_000_000n],
    ['overpaid, through the temporary wallet', { route: 'temp_wallet', amount: '31.5' }, 31_185_000n],
    [
      'underpaid and accepted, paid directly',
      { route: 'direct', amount: '20', accept_underpayment: true },
      20_000_000n,
    ],
    // The service reports N = 24.7 where P - F = 24.75: rule 1 waits for the chain, which proves 24.75.
    ['fee arithmetic mismatch, settled by the proven net', { reported_net_income: '24.7' }, 24_750_000n],
  ];

  it.each(cases)(
    'behavior: %s ends with wallet N debited and in_transit cleared',
    async (_name, body, net) => {
      const id = await newIntent();
      await pay(id, body);
      await waitForConfirmed(id);
      await mine(3);
      const lines = await linesOnceCounted(id, 'chain.payment_proven', 1);
      expect(lines.filter((l) => l.startsWith('chain.payment_proven'))).toEqual([
        `chain.payment_proven: assets:in_transit ${-net}`,
        `chain.payment_proven: assets:wallet ${net}`,
      ]);
      expect(lines).toContain(`checkout.confirmed: assets:in_transit ${net}`);
      await expectProofsHold();
    },
  );

  it('behavior: a reorg of depth 3 after the proof reverses it with a finding, and re-inclusion proves it again', async () => {
    const id = await newIntent();
    await pay(id, { route: 'direct' });
    await waitForConfirmed(id);
    const { rows } = await pipeline.db.execute<{ tx_hash: string }>(
      sql`select tx_hash from checkout_intents where id = ${id}`,
    );
    const txHash = rows[0]!.tx_hash;
    // The payment's block is the head; two more make it final at depth 2, and a reorg of 3 replaces it.
    await mine(2);
    await linesOnceCounted(id, 'chain.payment_proven', 1);
    const raw = await rpc<string>('eth_getRawTransactionByHash', [txHash]);
    await rpc('anvil_reorg', [3, []]);

    const afterReorg = await linesOnceCounted(id, 'chain.payment_proven.reversal', 1);
    expect(afterReorg.filter((l) => l.startsWith('chain.payment_proven.reversal'))).toEqual([
      'chain.payment_proven.reversal: assets:in_transit 25000000',
      'chain.payment_proven.reversal: assets:wallet -25000000',
    ]);
    const finding = await pipeline.db.execute<{ details: { booked_as: string; tx_hash: string } }>(sql`
      select details from findings where kind = 'reorged_transfer' and details->>'tx_hash' = ${txHash.toLowerCase()}`);
    expect(finding.rows[0]?.details.booked_as).toBe('payment_proof');

    // The same signed transaction lands again, in another block: a new inclusion, proven again.
    await rpc('eth_sendRawTransaction', [raw]);
    await mine(2);
    const final = await linesOnceCounted(id, 'chain.payment_proven', 2);
    expect(final.filter((l) => l.startsWith('chain.payment_proven:'))).toHaveLength(4);
    const blocks = await pipeline.db.execute<{ state: string }>(sql`
      select state from chain_transfers where tx_hash = ${txHash.toLowerCase()} order by id`);
    expect(blocks.rows.map((r) => r.state)).toEqual(['orphaned', 'final']);
    await expectProofsHold();
  });
});

describe('chain: transfers nobody explains', () => {
  it('behavior: a token the registry does not accept, sent to the merchant wallet, never counts', async () => {
    // anvil's second dev account deploys a look-alike token (the sandbox deploys with the first).
    const account = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
    const viemChain = {
      id: chain.chainId,
      name: 'sandbox',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [chain.rpcUrl] } },
    } as const;
    const wallet = createWalletClient({ account, chain: viemChain, transport: http(chain.rpcUrl) });
    const rpcClient = rpcs.get(chain.chainId)!.client;
    const deploy = await wallet.deployContract({
      abi: sandboxTokenAbi,
      bytecode: sandboxTokenBytecode,
      args: ['Tether USD (fake)', 'USDT', 6],
    });
    const fake = (await rpcClient.waitForTransactionReceipt({ hash: deploy })).contractAddress!;
    await rpcClient.waitForTransactionReceipt({
      hash: await wallet.writeContract({
        address: fake,
        abi: sandboxTokenAbi,
        functionName: 'mint',
        args: [account.address, 10n ** 9n],
      }),
    });
    const sent = await wallet.writeContract({
      address: fake,
      abi: sandboxTokenAbi,
      functionName: 'transfer',
      args: [merchant as `0x${string}`, 25_000_000n],
    });
    const receipt = await rpcClient.waitForTransactionReceipt({ hash: sent });
    expect(parseEventLogs({ abi: sandboxTokenAbi, logs: receipt.logs, eventName: 'Transfer' })).toHaveLength(
      1,
    );
    await mine(3);
    // Once the indexer has read past that block, nothing of it is stored or booked.
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ b: string }>(
        sql`select block_number::text as b from chain_cursors where chain_id = ${chain.chainId}`,
      );
      return rows[0] && BigInt(rows[0].b) >= receipt.blockNumber + 3n;
    });
    const stored = await pipeline.db.execute(
      sql`select 1 from chain_transfers where tx_hash = ${sent.toLowerCase()}`,
    );
    expect(stored.rows).toEqual([]);
    const booked = await pipeline.db.execute(
      sql`select 1 from ledger_entries where metadata->>'tx_hash' = ${sent.toLowerCase()}`,
    );
    expect(booked.rows).toEqual([]);
    await expectProofsHold();
  });

  it('behavior: a stranger paying the merchant wallet directly lands in suspense with a finding (rule 9)', async () => {
    const stranger = await chain.wallet('stranger');
    await chain.mint('USDC', stranger, 7_000_000n);
    const sent = await chain.transfer('USDC', 'stranger', merchant as `0x${string}`, 7_000_000n);
    await mine(3);
    const entry = await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ id: string }>(sql`
        select id::text from ledger_entries
        where kind = 'chain.transfer_in_unmatched' and metadata->>'tx_hash' = ${sent.txHash.toLowerCase()}`);
      return rows[0];
    }, 40_000);
    const lines = await pipeline.db.execute<{ line: string }>(sql`
      select split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) || ' ' || p.amount::text as line
      from ledger_postings p join ledger_accounts a on a.id = p.account_id
      where p.entry_id = ${entry.id}::bigint order by a.code`);
    expect(lines.rows.map((r) => r.line)).toEqual(['assets:suspense -7000000', 'assets:wallet 7000000']);
    const finding = await pipeline.db.execute<{ severity: string }>(sql`
      select severity from findings where kind = 'unmatched_transfer_in' and resolved_at is null
        and details->>'tx_hash' = ${sent.txHash.toLowerCase()}`);
    expect(finding.rows).toEqual([{ severity: 'warning' }]);
    await expectProofsHold();
  });
});

describe('chain: a payment the service sends back', () => {
  it('behavior: an underpaid direct payment and its return clear each other: no suspense, no owner transfer, no open finding', async () => {
    // Tracked (created through stablebooks): the poller learns the failure, as the service sends
    // no webhook for it.
    const { created } = await createIntent(pipeline.payments, 'st_a', {
      stable_coin: 1,
      amount_cents: 2500n,
    });
    const id = created.allsvc_checkout_intent_id;
    const res = await pipeline.sandbox.control<{
      status: number;
      sandbox: { payment?: { refund_tx_hash?: string } };
    }>(`/_sandbox/intents/${id}/pay`, { route: 'direct', amount: '20' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.status).toBe(CheckoutStatus.UNDERPAID);
    const returnHash = res.body.sandbox.payment?.refund_tx_hash?.toLowerCase() ?? '';
    expect(returnHash).toMatch(/^0x[0-9a-f]{64}$/);
    await mine(3);

    const lines = await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ line: string }>(sql`
        select split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) || ' ' || p.amount::text as line
        from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
        where e.kind = 'chain.payment_returned' and e.metadata->>'intent_id' = ${id} order by a.code`);
      return rows.length > 0 ? rows.map((r) => r.line) : undefined;
    }, 40_000);
    expect(lines).toEqual(['assets:suspense 20000000', 'assets:wallet -20000000']);
    // Rule 4: the failed intent itself has no entry; the two chain facts name it.
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual([]);
    const { rows: intent } = await pipeline.db.execute<{ status: number; tx_hash: string }>(
      sql`select status, lower(tx_hash) as tx_hash from checkout_intents where id = ${id}`,
    );
    expect(intent).toEqual([{ status: CheckoutStatus.UNDERPAID, tx_hash: expect.any(String) }]);
    const paidHash = intent[0]!.tx_hash;
    // The arrival went to suspense (rule 9); nothing of either transfer is an owner transfer.
    const byTx = await pipeline.db.execute<{ kind: string; tx: string }>(sql`
      select kind, metadata->>'tx_hash' as tx from ledger_entries
      where metadata->>'tx_hash' in (${paidHash}, ${returnHash}) order by id`);
    expect(byTx.rows).toEqual([
      { kind: 'chain.transfer_in_unmatched', tx: paidHash },
      { kind: 'chain.payment_returned', tx: returnHash },
    ]);
    const open = await pipeline.db.execute(sql`
      select kind from findings where resolved_at is null and details->>'tx_hash' in (${paidHash}, ${returnHash})`);
    expect(open.rows).toEqual([]);
    const matched = await pipeline.db.execute<{ matched_as: string; matched_ref: string }>(
      sql`select matched_as, matched_ref from chain_transfers where tx_hash = ${returnHash}`,
    );
    expect(matched.rows).toEqual([{ matched_as: 'payment_returned', matched_ref: id }]);
    await expectProofsHold();
  });
});

describe('chain: money the merchant moves itself', () => {
  it('behavior: a transfer out of the merchant wallet that pays nothing is an owner transfer with a finding (rule 9)', async () => {
    const outside = await chain.wallet('owner-bank');
    // The merchant's own deposit first (itself an unmatched transfer in), so the test stands alone.
    await chain.mint('USDT', merchant as `0x${string}`, 1_250_000n);
    const sent = await chain.transfer('USDT', 'merchant:st_a', outside, 1_250_000n);
    await mine(3);
    const lines = await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ line: string }>(sql`
        select split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) || ' ' || p.amount::text as line
        from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
        where e.kind = 'chain.transfer_out_unmatched' and e.metadata->>'tx_hash' = ${sent.txHash.toLowerCase()}
        order by a.code`);
      return rows.length > 0 ? rows.map((r) => r.line) : undefined;
    });
    expect(lines).toEqual(['assets:wallet -1250000', 'equity:owner_transfers 1250000']);
    const finding = await pipeline.db.execute<{ kind: string }>(sql`
      select kind from findings where resolved_at is null and details->>'tx_hash' = ${sent.txHash.toLowerCase()}`);
    expect(finding.rows).toEqual([{ kind: 'unmatched_transfer_out' }]);
    await expectProofsHold();
  });
});

describe('stablebooks ledger prove', () => {
  it('behavior: proves every watched wallet and token against balanceOf, as a table and as JSON', async () => {
    await expectProofsHold();
    const env = daemonEnvForConfig(pipeline.config);
    const json = await runCli(['ledger', 'prove', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const proofs = JSON.parse(json.stdout) as Array<{
      role: string;
      token: string;
      ok: boolean | null;
      ledger_balance: string;
      chain_balance: string;
    }>;
    expect(proofs.map((p) => `${p.role} ${p.token} ${p.ok}`).sort()).toEqual([
      'custody USDC true',
      'custody USDT true',
      'merchant USDC true',
      'merchant USDT true',
    ]);
    const merchantUsdt = proofs.find((p) => p.role === 'merchant' && p.token === 'USDT')!;
    expect(merchantUsdt.chain_balance).toBe(
      (await chain.balanceOf('USDT', merchant as `0x${string}`)).toString(),
    );
    const table = await runCli(['ledger', 'prove'], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/merchant\s+0x[0-9a-f]{40}\s+\d+\s+[\d.]+ USDT\s+[\d.]+ USDT\s+ok/);
  });

  it('error: a chain without an RPC URL is one clear line', async () => {
    const run = await runCli(['ledger', 'prove', '--chain', '999'], daemonEnvForConfig(pipeline.config));
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toEqual(['stablebooks: --chain: no RPC_URL_999 is configured']);
  });
});
