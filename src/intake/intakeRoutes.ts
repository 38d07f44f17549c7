import type { FastifyInstance } from 'fastify';
import { type IntakeDeps, receiveWebhook, type WebhookEndpoint } from './receiveWebhook.ts';

const ROUTES: Array<[string, WebhookEndpoint]> = [
  ['/webhooks/checkout', 'checkout'],
  ['/webhooks/claim-links', 'claim-links'],
];

/**
 * POST /webhooks/checkout and /webhooks/claim-links. The server keeps bodies as raw bytes (the
 * signature is over them) and refuses bodies over 1 MiB with 413; see src/daemon/httpServer.ts.
 */
export function registerIntakeRoutes(app: FastifyInstance, deps: IntakeDeps): void {
  for (const [path, endpoint] of ROUTES) {
    app.post(path, async (req, reply) => {
      const started = performance.now();
      // The signature covers the path and query exactly as sent: split, not parsed.
      const q = req.url.indexOf('?');
      const answer = await receiveWebhook(deps, {
        endpoint,
        method: req.method,
        path: q < 0 ? req.url : req.url.slice(0, q),
        query: q < 0 ? '' : req.url.slice(q + 1),
        headers: req.headers,
        rawBody: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
      });
      deps.metrics.webhookIntakeSeconds.observe({ endpoint }, (performance.now() - started) / 1000);
      if (answer.retryAfterSeconds !== undefined)
        reply.header('retry-after', String(answer.retryAfterSeconds));
      return reply.code(answer.status).send(answer.body);
    });
  }
}
