import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Address, createPublicClient, erc20Abi, type Hash, http, parseEventLogs } from 'viem';
import { unixSeconds } from '../../../src/clock.ts';
import type { CoinSymbol } from '../../../src/sandbox/chain/types.ts';
import type { ClaimLinkView } from '../../../src/sandbox/claimLinks/claimLinkEngine.ts';
import type { EnvelopeBody } from '../../../src/sandbox/envelope.ts';
import { custodyWallet } from '../../../src/sandbox/world.ts';
import { signRequest } from '../../../src/svc/signing/requestSignature.ts';
import type { TestSandbox } from '../../helpers/sandboxHarness.ts';

/**
 * Shared pieces of the claim-link conformance tests: raw signed requests (for what the project's
 * client refuses to send), chain reads that do not go through the sandbox's own code, a webhook
 * receiver, and the control-API calls the tests use.
 */

export const CREATE_PATH = '/v1/claim_link_auto_payouts';
export const cancelPath = (id: string) => `/v1/claim_link_auto_payouts/${id}/cancel`;
export const SEPOLIA = { serviceChain: 11, chainId: 11155111 } as const;
export const BNB = { serviceChain: 6, chainId: 56 } as const;

/** The project's client for a store, signing with the sandbox clock (which the tests move). */
export const clientFor = (
  sb: TestSandbox,
  storeId: string,
  retry: { maxAttempts: number } = { maxAttempts: 1 },
) => sb.client(storeId, { clock: sb.world.clock, retry, sleep: async () => {} });

export interface RawAnswer {
  status: number;
  body: EnvelopeBody;
}

/** A request signed by hand with the store's secret: exact body bytes, any body at all. */
export async function rawSigned(
  sb: TestSandbox,
  storeId: string,
  path: string,
  body: string | undefined,
  method: 'GET' | 'POST' = 'POST',
): Promise<RawAnswer> {
  const store = sb.config.businesses.flatMap((b) => b.stores).find((s) => s.store_id === storeId);
  if (!store) throw new Error(`no store ${storeId}`);
  const url = new URL(path, sb.url);
  const signed = signRequest({
    secret: store.api_secret,
    method,
    path: url.pathname,
    query: url.search.replace(/^\?/, ''),
    body: body ?? '',
    timestamp: unixSeconds(sb.world.clock),
    nonce: randomUUID(),
  });
  const res = await fetch(url, {
    method,
    headers: {
      'X-API-Key': store.api_key,
      ...signed.headers,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body,
  });
  return { status: res.status, body: (await res.json()) as EnvelopeBody };
}

export const createBody = (fields: Record<string, unknown>) =>
  JSON.stringify({
    amount: '1',
    stable_coin: 1,
    chain: SEPOLIA.serviceChain,
    reference_id: ref(),
    ...fields,
  });

let refSeq = 0;
/** A fresh reference_id. */
export const ref = (prefix = 'ref') => `${prefix}-${Date.now().toString(36)}-${refSeq++}`;

export async function listLinks(sb: TestSandbox): Promise<ClaimLinkView[]> {
  const res = await sb.control<{ claim_links: ClaimLinkView[] }>('/_sandbox/claim_links');
  return res.body.claim_links;
}

export async function linkView(sb: TestSandbox, id: string): Promise<ClaimLinkView> {
  const res = await sb.control<ClaimLinkView>(`/_sandbox/claim_links/${id}`);
  if (res.status !== 200) throw new Error(`no link ${id}: ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function advance(sb: TestSandbox, seconds: number): Promise<void> {
  const res = await sb.control('/_sandbox/clock/advance', { seconds });
  if (res.status !== 200) throw new Error(`clock advance failed: ${JSON.stringify(res.body)}`);
}

/** Waits for the scanner: pending_deposit -> link_sent. */
export async function untilLinkSent(sb: TestSandbox, id: string): Promise<void> {
  await advance(sb, 3);
  const view = await linkView(sb, id);
  if (view.status !== 'link_sent') throw new Error(`link ${id} is ${view.status}, expected link_sent`);
}

/** Polls until `check` returns a value (real time; the sandbox's timers tick every 50 ms). */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Reads the chain directly (viem against the anvil node), not through the sandbox's own code. */
export function chainReader(sb: TestSandbox, chainId: number) {
  const chain = sb.world.chains.get(chainId);
  if (!chain) throw new Error(`chain ${chainId} is not simulated`);
  const client = createPublicClient({ transport: http(chain.rpcUrl) });
  return {
    token: (symbol: CoinSymbol) => chain.tokens[symbol].address,
    custody: (businessId: string) => custodyWallet(chain, businessId),
    async balance(symbol: CoinSymbol, owner: Address): Promise<bigint> {
      return client.readContract({
        address: chain.tokens[symbol].address,
        abi: erc20Abi,
        functionName: 'balanceOf',
        args: [owner],
      });
    },
    /** The ERC-20 Transfer logs of a mined transaction. */
    async transfers(
      hash: Hash,
    ): Promise<Array<{ token: Address; from: Address; to: Address; value: bigint }>> {
      const receipt = await client.getTransactionReceipt({ hash });
      return parseEventLogs({ abi: erc20Abi, logs: receipt.logs, eventName: 'Transfer' }).map((l) => ({
        token: l.address,
        from: l.args.from,
        to: l.args.to,
        value: l.args.value,
      }));
    },
  };
}

export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * A merchant's webhook endpoint: records every POST and answers 200. `verify` checks a delivery's
 * signature with an independent implementation of the spec's eight-line canonical string.
 */
export async function startWebhookReceiver(): Promise<{
  url: string;
  received: ReceivedWebhook[];
  verify(hook: ReceivedWebhook, secret: string): boolean;
  close(): Promise<void>;
}> {
  const received: ReceivedWebhook[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string') headers[k.toLowerCase()] = v;
      received.push({ path: req.url ?? '', headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/claim-links?tenant=t1`,
    received,
    verify(hook, secret) {
      const url = new URL(hook.path, 'http://x');
      // node:crypto directly, not the project's signing code, so the check is independent.
      const bodyHash = createHash('sha256').update(Buffer.from(hook.body, 'utf8')).digest('hex');
      const canonical = [
        'allsvc:webhook:v1',
        'POST',
        url.pathname,
        url.search.replace(/^\?/, ''),
        hook.headers['x-webhook-id'],
        hook.headers['x-webhook-timestamp'],
        hook.headers['x-webhook-nonce'],
        bodyHash,
      ].join('\n');
      const expected = `v1=${createHmac('sha256', secret).update(canonical).digest('base64')}`;
      return hook.headers['x-webhook-signature'] === expected;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
