import Fastify, { type FastifyInstance } from 'fastify';
import type { Metrics } from '../metrics/metrics.ts';

/**
 * The daemon's one HTTP port: /healthz (the process is alive), /readyz (PostgreSQL and Redis
 * answer), /metrics, and, in the intake role, the webhook routes. Bodies are kept as raw bytes;
 * a body over 1 MiB is 413 and nothing else about it is read.
 */
export function createHttpServer(deps: {
  metrics: Metrics;
  ready: () => Promise<Record<string, boolean>>;
}): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.setErrorHandler((err, req, reply) => {
    const code = (err as { code?: string }).code;
    if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const endpoint = req.url.includes('claim-links') ? 'claim-links' : 'checkout';
      deps.metrics.webhooksRejected.inc({ endpoint, reason: 'too_large' });
      return reply.code(413).send({ ok: false, reason: 'body larger than 1 MiB' });
    }
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500)
      return reply.code(status).send({ ok: false, reason: (err as Error).message });
    return reply.code(500).send({ ok: false, reason: 'internal error; the request can be retried' });
  });
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
