import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { DomainContext } from '../../../src/context/domainContext.ts';
import type { Db } from '../../../src/db/database.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import type { CreatePayoutTuning } from '../../../src/payouts/createPayout.ts';
import type { SvcClient } from '../../../src/svc/client.ts';
import { captureLogger } from '../../helpers/captureLogger.ts';
import { startTestSandbox, type TestSandbox, testStore } from '../../helpers/sandboxHarness.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { chainReader, startWebhookReceiver } from '../sandbox/claimLinkTestKit.ts';

export const SEPOLIA = 11155111;
/** The sandbox's default funding fee: 0.5 coin, in 6-decimal base units. */
export const FEE = 500_000n;

export interface PayoutsWorld {
  sb: TestSandbox;
  db: Db;
  deps: DomainContext & CreatePayoutTuning;
  /** Every line the deps' logger wrote (level trace). */
  logs: string[];
  /** Replace the client of the next calls (restore with `null`). */
  useClient(client: SvcClient | null): void;
  /** The sandbox store's own client (no retries, sandbox clock). */
  plainClient(options?: Parameters<TestSandbox['client']>[1]): SvcClient;
  /** USDT balance of the business custody wallet, read from the chain. */
  custodyBalance(): Promise<bigint>;
  /** Advances the sandbox clock (and so the deps' clock). */
  advance(seconds: number): Promise<void>;
  /** Turns anvil's automine off or on (on also mines what waits). */
  automine(on: boolean): Promise<void>;
  /** The ledger lines of a claim link's entries: `kind: account amount`. */
  ledgerLines(claimLinkId: string): Promise<string[]>;
  webhooks: Awaited<ReturnType<typeof startWebhookReceiver>>;
}

let seq = 0;
/** A fresh reference_id. */
export const ref = (prefix = 'po') => `${prefix}-${Date.now().toString(36)}-${seq++}`;

/**
 * A sandbox (its own anvil, Sepolia) with store st_a of business biz_1, whose claim-link webhooks go
 * to a local receiver, a migrated database of the file's own, and DomainContext on both with the
 * sandbox clock, no waits between attempts and a logger whose lines are kept.
 */
export async function startPayoutsWorld(label: string): Promise<PayoutsWorld> {
  const webhooks = await startWebhookReceiver();
  afterAll(() => webhooks.close());
  const store = testStore('st_a', { claim_link_webhook_url: webhooks.url });
  const sb = await startTestSandbox({
    chains: [SEPOLIA],
    config: {
      rate_limit: { requests_per_second: 10_000, burst: 10_000 },
      businesses: [{ business_id: 'biz_1', stores: [store] }],
    },
  });
  const database = await createMigratedDatabase(label);
  const chain = sb.world.chains.get(SEPOLIA);
  if (!chain) throw new Error('no sandbox chain');
  const reader = chainReader(sb, SEPOLIA);
  const custody = await reader.custody('biz_1');
  const { logger, lines: logs } = captureLogger({ level: 'trace', secrets: [store.api_secret as string] });
  const plainClient = (options: Parameters<TestSandbox['client']>[1] = {}) =>
    sb.client('st_a', {
      clock: sb.world.clock,
      retry: { maxAttempts: 1 },
      sleep: async () => {},
      ...options,
    });
  const defaultClient = plainClient();
  let override: SvcClient | null = null;
  const deps: DomainContext & CreatePayoutTuning = {
    db: database.db,
    chains: createChainRegistry([
      {
        chain_id: SEPOLIA,
        tokens: {
          USDT: { address: chain.tokens.USDT.address, decimals: chain.decimals },
          USDC: { address: chain.tokens.USDC.address, decimals: chain.decimals },
        },
      },
    ]),
    stores: [],
    accounts: createAccountCache(),
    client: (storeId) => {
      if (storeId !== 'st_a') throw new Error(`store ${storeId} is not in STORES_FILE`);
      return override ?? defaultClient;
    },
    clock: sb.world.clock,
    logger,
    encryptionKey: randomBytes(32),
    sleep: async () => {},
  };
  const rpc = async (method: string, params: unknown[]) => {
    const res = await fetch(chain.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = (await res.json()) as { error?: unknown };
    if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  };
  return {
    sb,
    db: database.db,
    deps,
    logs,
    webhooks,
    useClient: (client) => {
      override = client;
    },
    plainClient,
    custodyBalance: () => reader.balance('USDT', custody),
    async advance(seconds) {
      const res = await sb.control('/_sandbox/clock/advance', { seconds });
      if (res.status !== 200) throw new Error(`clock advance failed: ${JSON.stringify(res.body)}`);
    },
    async automine(on) {
      await rpc('evm_setAutomine', [on]);
      if (on) await rpc('evm_mine', []);
    },
    async ledgerLines(claimLinkId) {
      const { rows } = await database.db.execute<{ line: string }>(sql`
        select e.kind || ': ' || split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) || ' ' || p.amount::text as line
        from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
        where e.ref_id = ${claimLinkId} order by e.id, a.code`);
      return rows.map((r) => r.line);
    },
  };
}

/** A client that forwards to `inner`, counting calls and keeping each create request. */
export function spyClient(
  inner: SvcClient,
  create?: (
    request: Parameters<SvcClient['createClaimLinkAutoPayout']>[0],
    call: number,
  ) => ReturnType<SvcClient['createClaimLinkAutoPayout']>,
): SvcClient & { creates: Array<Parameters<SvcClient['createClaimLinkAutoPayout']>[0]> } {
  const creates: Array<Parameters<SvcClient['createClaimLinkAutoPayout']>[0]> = [];
  return {
    ...inner,
    creates,
    createClaimLinkAutoPayout: (request) => {
      creates.push(request);
      return create ? create(request, creates.length) : inner.createClaimLinkAutoPayout(request);
    },
  };
}

/** Waits for the scanner: the link moves pending_deposit -> link_sent 2 sandbox seconds after funding. */
export async function untilLinkSent(world: PayoutsWorld, claimLinkId: string): Promise<void> {
  await world.advance(3);
  const res = await world.sb.control<{ status: string }>(`/_sandbox/claim_links/${claimLinkId}`);
  if (res.body.status !== 'link_sent') throw new Error(`link ${claimLinkId} is ${res.body.status}`);
}
