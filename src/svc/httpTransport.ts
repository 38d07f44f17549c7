import http from 'node:http';
import https from 'node:https';

/**
 * One HTTP exchange with the service, on keep-alive connections. node:http instead of fetch: the
 * webhook workers fetch an intent per payment, and fetch (undici with WHATWG streams and an
 * AbortSignal per call) cost about a sixth of a worker's CPU per payment. Redirects are never
 * followed (they would carry the signed headers, nonce included, wherever they point).
 */
export interface HttpExchange {
  url: URL;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

export interface HttpAnswer {
  status: number;
  /** Header names in lower case; repeated headers joined with ", " (as fetch does). */
  headers: Record<string, string>;
  body: Buffer;
}

// An idle connection is dropped after 4 s (undici's default too), and sooner when the server's
// Keep-Alive header asks: reusing a connection the server is closing would fail a request that
// may have left (an unknown outcome for a create).
const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: 4_000 }),
  'https:': new https.Agent({ keepAlive: true, timeout: 4_000 }),
};

/**
 * Rejects with an Error named TimeoutError when no full answer came within timeoutMs, with the
 * socket error (its `code`, e.g. ECONNREFUSED) as `cause` when the connection failed, and with an
 * error for any redirect.
 */
export function sendHttp(exchange: HttpExchange): Promise<HttpAnswer> {
  const { url } = exchange;
  const transport = url.protocol === 'https:' ? https : http;
  const agent = url.protocol === 'https:' ? agents['https:'] : agents['http:'];
  return new Promise<HttpAnswer>((resolve, reject) => {
    const req = transport.request(url, { method: exchange.method, headers: exchange.headers, agent });
    const timer = setTimeout(() => {
      const err = new Error(`no response within ${exchange.timeoutMs} ms`);
      err.name = 'TimeoutError';
      req.destroy(err);
    }, exchange.timeoutMs);
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(err.name === 'TimeoutError' ? err : new Error(`request failed: ${err.message}`, { cause: err }));
    };
    req.on('error', fail);
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        res.resume();
        req.destroy();
        clearTimeout(timer);
        reject(new Error(`the service answered a redirect (${status}); not followed`));
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(timer);
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
        }
        resolve({ status, headers, body: Buffer.concat(chunks) });
      });
    });
    req.end(exchange.body);
  });
}
