import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A JSON-RPC proxy in front of anvil that behaves like the providers the indexer meets in
 * production: a block-range limit on eth_getLogs with a real provider's error message, rate-limit
 * error bodies, being down (connection refused or HTTP 503), lagging behind (no block above
 * some height), and incomplete eth_getLogs answers (null, or logs left out, as from a node behind a
 * load balancer that has not caught up). Batches are handled item by item, as providers do.
 */
export interface ProxyBehaviour {
  /** eth_getLogs over more blocks than this (both ends included) is refused. */
  maxLogRange: number | null;
  /**
   * How the refusal reads: Alchemy's "Log response size exceeded ... this block range should work:
   * [0x.., 0x..]" (code -32602), or "query exceeds max block range N" (code -32600).
   */
  rangeErrorStyle: 'alchemy' | 'max_block_range';
  /** The next N requests (batch items) get a JSON-RPC rate-limit error with HTTP 200. */
  rateLimitNext: number;
  /** `code`: {code: -32005, "limit exceeded"}; `message`: {code: -32000, "Too many requests, slow down"}. */
  rateLimitStyle: 'code' | 'message';
  /** Answer every HTTP request with 503. (For connection refused, use `goDown()`.) */
  unavailable: boolean;
  /** eth_getBlockByNumber of a block above this answers null (a node that is behind). */
  blocksAbove: bigint | null;
  /** Blocks whose hash this node reports differently (a node on another fork). */
  fakeHashes: Map<bigint, string>;
  /** Delay before answering each HTTP request, in ms (a slow node). */
  delayMs: number;
  /** The next N eth_getLogs requests answer `result: null` (a lagging node's "nothing"). */
  nullLogsNext: number;
  /**
   * Transaction hash (lowercase) -> how many more eth_getLogs answers leave its logs out. Only
   * answers that held one of its logs count down.
   */
  omitLogsOf: Map<string, number>;
}

export interface RpcCall {
  method: string;
  params: unknown[];
}

export interface RpcProxy {
  url: string;
  /** Every request item seen, in order. */
  calls: RpcCall[];
  behaviour: ProxyBehaviour;
  set(patch: Partial<ProxyBehaviour>): void;
  /** Stops listening: connections are refused until `comeBack()`. */
  goDown(): Promise<void>;
  comeBack(): Promise<void>;
  close(): Promise<void>;
}

interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: number | string | null;
  method: string;
  params?: unknown[];
}

export async function startRpcProxy(
  targetUrl: string,
  initial: Partial<ProxyBehaviour> = {},
): Promise<RpcProxy> {
  const behaviour: ProxyBehaviour = {
    maxLogRange: null,
    rangeErrorStyle: 'alchemy',
    rateLimitNext: 0,
    rateLimitStyle: 'message',
    unavailable: false,
    blocksAbove: null,
    fakeHashes: new Map(),
    delayMs: 0,
    nullLogsNext: 0,
    omitLogsOf: new Map(),
    ...initial,
  };
  const calls: RpcCall[] = [];

  const answer = async (req: JsonRpcRequest): Promise<unknown> => {
    const params = req.params ?? [];
    calls.push({ method: req.method, params });
    const reply = (body: Record<string, unknown>) => ({ jsonrpc: '2.0', id: req.id, ...body });
    if (behaviour.rateLimitNext > 0) {
      behaviour.rateLimitNext--;
      return reply({
        error:
          behaviour.rateLimitStyle === 'code'
            ? { code: -32005, message: 'limit exceeded' }
            : { code: -32000, message: 'Too many requests, please slow down' },
      });
    }
    if (req.method === 'eth_getLogs' && behaviour.maxLogRange !== null) {
      const filter = (params[0] ?? {}) as { fromBlock?: string; toBlock?: string };
      if (filter.fromBlock?.startsWith('0x') && filter.toBlock?.startsWith('0x')) {
        const from = BigInt(filter.fromBlock);
        const to = BigInt(filter.toBlock);
        const limit = BigInt(behaviour.maxLogRange);
        if (to - from + 1n > limit) {
          return reply({
            error:
              behaviour.rangeErrorStyle === 'alchemy'
                ? {
                    code: -32602,
                    message:
                      'Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range ' +
                      'and no limit on the response size, or you can request any block range with a cap of 10K ' +
                      'logs in the response. Based on your parameters, this block range should work: ' +
                      `[0x${from.toString(16)}, 0x${(from + limit - 1n).toString(16)}]`,
                  }
                : { code: -32600, message: `query exceeds max block range ${behaviour.maxLogRange}` },
          });
        }
      }
    }
    if (req.method === 'eth_getLogs' && behaviour.nullLogsNext > 0) {
      behaviour.nullLogsNext--;
      return reply({ result: null });
    }
    if (
      req.method === 'eth_getBlockByNumber' &&
      typeof params[0] === 'string' &&
      params[0].startsWith('0x')
    ) {
      const n = BigInt(params[0]);
      if (behaviour.blocksAbove !== null && n > behaviour.blocksAbove) return reply({ result: null });
    }
    const forwarded = await forward(targetUrl, req);
    const fake =
      req.method === 'eth_getBlockByNumber' && typeof params[0] === 'string' && params[0].startsWith('0x')
        ? behaviour.fakeHashes.get(BigInt(params[0]))
        : undefined;
    if (fake && forwarded && typeof forwarded === 'object' && 'result' in forwarded && forwarded.result) {
      return { ...forwarded, result: { ...(forwarded.result as object), hash: fake } };
    }
    if (req.method === 'eth_getLogs' && behaviour.omitLogsOf.size > 0) return omitLogs(forwarded);
    return forwarded;
  };

  const omitLogs = (forwarded: unknown): unknown => {
    const result = (forwarded as { result?: unknown } | null)?.result;
    if (!Array.isArray(result)) return forwarded;
    const held = new Set<string>();
    const kept = result.filter((l: { transactionHash?: string }) => {
      const tx = l.transactionHash?.toLowerCase() ?? '';
      if ((behaviour.omitLogsOf.get(tx) ?? 0) <= 0) return true;
      held.add(tx);
      return false;
    });
    for (const tx of held) behaviour.omitLogsOf.set(tx, (behaviour.omitLogsOf.get(tx) ?? 1) - 1);
    return { ...(forwarded as object), result: kept };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (behaviour.delayMs > 0) await new Promise((r) => setTimeout(r, behaviour.delayMs));
    if (behaviour.unavailable) {
      res.writeHead(503, { 'content-type': 'text/plain' }).end('Service Unavailable');
      return;
    }
    let body: JsonRpcRequest | JsonRpcRequest[];
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400).end();
      return;
    }
    const out = Array.isArray(body) ? await Promise.all(body.map(answer)) : await answer(body);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
  };

  let server: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.writeHead(500).end());
  });
  await listen(server, 0);
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    behaviour,
    set(patch) {
      Object.assign(behaviour, patch);
    },
    async goDown() {
      await closeServer(server);
    },
    async comeBack() {
      server = createServer((req, res) => {
        handle(req, res).catch(() => res.writeHead(500).end());
      });
      await listen(server, port);
    },
    async close() {
      if (server.listening) await closeServer(server);
    },
  };
}

async function forward(url: string, req: JsonRpcRequest): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(req),
  });
  return res.json();
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
