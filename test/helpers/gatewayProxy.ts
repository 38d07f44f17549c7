import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP gateway in front of the sandbox's API, as a CDN or reverse proxy stands in front of the
 * real service: it forwards every request unchanged (so request signatures still verify) and
 * answers of its own when told to: a 429 HTML page (with or without Retry-After) or a 502 HTML
 * page, neither of them signed nor a service envelope. It records what it answered and when.
 */
export interface GatewayBehaviour {
  /** The next N requests get `429 text/html` from the gateway itself. */
  rateLimitNext: number;
  /** Retry-After header value of those 429s; undefined sends none. */
  retryAfter: string | undefined;
  /** The next N requests (after the 429s) get `502 text/html` from the gateway itself. */
  badGatewayNext: number;
}

export interface GatewayRequest {
  path: string;
  /** Date.now() when the request arrived. */
  at: number;
  /** 'forwarded' or the status the gateway answered itself. */
  answer: 'forwarded' | 429 | 502;
}

export interface GatewayProxy {
  url: string;
  requests: GatewayRequest[];
  set(patch: Partial<GatewayBehaviour>): void;
  close(): Promise<void>;
}

export async function startGatewayProxy(targetUrl: string): Promise<GatewayProxy> {
  const target = new URL(targetUrl);
  const behaviour: GatewayBehaviour = { rateLimitNext: 0, retryAfter: undefined, badGatewayNext: 0 };
  const requests: GatewayRequest[] = [];

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const seen: GatewayRequest = { path: req.url ?? '/', at: Date.now(), answer: 'forwarded' };
    requests.push(seen);
    if (behaviour.rateLimitNext > 0) {
      behaviour.rateLimitNext--;
      seen.answer = 429;
      res
        .writeHead(429, {
          'content-type': 'text/html',
          ...(behaviour.retryAfter !== undefined ? { 'retry-after': behaviour.retryAfter } : {}),
        })
        .end('<html><head><title>429 Too Many Requests</title></head><body>rate limited</body></html>');
      return;
    }
    if (behaviour.badGatewayNext > 0) {
      behaviour.badGatewayNext--;
      seen.answer = 502;
      res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>502 Bad Gateway</body></html>');
      return;
    }
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body>502 Bad Gateway</body></html>');
    });
    upstream.end(Buffer.concat(chunks));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    set(patch) {
      Object.assign(behaviour, patch);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
