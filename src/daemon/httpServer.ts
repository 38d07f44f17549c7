import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { HttpLimits } from '../config/loadConfig.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { capConnections } from './connectionCap.ts';

/**
 * The daemon's two HTTP servers:
 * - the public one (PORT) serves the webhook routes of the intake role and /healthz, nothing else:
 *   it is the one the payments service must reach;
 * - the operations one (OPS_PORT on OPS_HOST) serves /healthz (the process is alive), /readyz
 *   (PostgreSQL and Redis answer), /metrics (which shows revenue balances) and /admin/queues:
 *   it stays on the operator's network.
 * Bodies are kept as raw bytes (the webhook signature is over them); a body over 1 MiB is 413 and
 * nothing else about it is read. Both hold against slow and many clients with the same `limits`
 * (HTTP_* settings): see createServer.
 */
export function createPublicServer(deps: { metrics: Metrics; limits: HttpLimits }): FastifyInstance {
  const app = createServer(deps.limits);
  app.setErrorHandler((err, req, reply) => {
    const code = (err as { code?: string }).code;
    if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const endpoint = req.url.includes('claim-links') ? 'claim-links' : 'checkout';
      deps.metrics.webhooksRejected.inc({ endpoint, reason: 'too_large' });
      return reply.code(413).send({ ok: false, reason: 'body larger than 1 MiB' });
    }
    return answerError(err, reply, () => {
      const endpoint = req.url.includes('claim-links') ? 'claim-links' : 'checkout';
      deps.metrics.webhookIntakeErrors.inc({ endpoint, reason: 'internal' });
    });
  });
  app.get('/healthz', async () => ({ ok: true }));
  return app;
}

export function createOpsServer(deps: {
  metrics: Metrics;
  ready: () => Promise<Record<string, boolean>>;
  limits: HttpLimits;
}): FastifyInstance {
  const app = createServer(deps.limits);
  app.setErrorHandler((err, _req, reply) => answerError(err, reply, () => {}));
  app.get('/healthz', async () => ({ ok: true }));
  app.get('/readyz', async (_req, reply) => {
    const checks = await deps.ready();
    const ok = Object.values(checks).every(Boolean);
    return reply.code(ok ? 200 : 503).send({ ok, checks });
  });
  app.get('/metrics', async (_req, reply) =>
    reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics()),
  );
  return app;
}

/**
 * Fastify and Node leave a request that never finishes open for ever (Fastify's requestTimeout and
 * connectionTimeout are 0): one client could hold a file descriptor per connection it opens. Here
 * the headers must arrive within headersTimeoutMs and the whole request within requestTimeoutMs
 * (then 408 and the connection closes), an idle keep-alive connection lasts keepAliveTimeoutMs,
 * a connection on which no byte moves for twice requestTimeoutMs (a client that stopped reading
 * its answer) is closed, and at most maxConnections are open (capConnections: the oldest goes).
 * Node looks for late requests every connectionsCheckingInterval, by default 30 s: once a second
 * (sooner for a shorter headers timeout) keeps a timeout within about a second of what is set.
 */
function createServer(limits: HttpLimits): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: 1024 * 1024,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionTimeout: 2 * limits.requestTimeoutMs,
    // Fastify answers 414 to a path parameter over 100 characters before any route sees it: an
    // id the read API's schema accepts (up to 128) was refused, and a longer one got a status the
    // document does not have. Up to this length the route's own schema says what is wrong (400).
    routerOptions: { maxParamLength: 2_048 },
    http: {
      headersTimeout: limits.headersTimeoutMs,
      // Node refuses a headers timeout longer than the request timeout it is created with.
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    },
  });
  capConnections(app.server, limits.maxConnections);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  return app;
}

function answerError(err: unknown, reply: FastifyReply, onServerError: () => void): FastifyReply {
  const status = (err as { statusCode?: number }).statusCode;
  if (status && status >= 400 && status < 500)
    return reply.code(status).send({ ok: false, reason: (err as Error).message });
  onServerError();
  return reply.code(500).send({ ok: false, reason: 'internal error; the request can be retried' });
}
