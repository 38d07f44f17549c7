import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { Metrics } from '../metrics/metrics.ts';

/**
 * The daemon's two HTTP servers:
 * - the public one (PORT) serves the webhook routes of the intake role and /healthz, nothing else:
 *   it is the one the payments service must reach;
 * - the operations one (OPS_PORT on OPS_HOST) serves /healthz (the process is alive), /readyz
 *   (PostgreSQL and Redis answer), /metrics (which shows revenue balances) and /admin/queues:
 *   it stays on the operator's network.
 * Bodies are kept as raw bytes (the webhook signature is over them); a body over 1 MiB is 413 and
 * nothing else about it is read.
 */
export function createPublicServer(deps: { metrics: Metrics }): FastifyInstance {
  const app = createServer();
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
}): FastifyInstance {
  const app = createServer();
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

function createServer(): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
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
