import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Clock } from '../clock.ts';
import { createMemoryNonceStore } from '../svc/signing/nonceStore.ts';
import { authenticate, type StoreIdentity } from './authenticate.ts';
import { sendEnvelope } from './envelope.ts';
import { registerTestRoutes } from './routes/testRoutes.ts';
import type { SandboxConfig } from './sandboxConfig.ts';

/**
 * The sandbox's HTTP face: the service's signed API. Every /v1 route is authenticated exactly as
 * the spec says before it runs. (The checkout-intent and claim-link routes and the /_sandbox
 * control API arrive with the sandbox issue.)
 */
export function createSandboxServer(options: { config: SandboxConfig; clock: Clock }): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  const nonces = createMemoryNonceStore(options.clock);
  const identities = new WeakMap<FastifyRequest, StoreIdentity>();

  // Keep every body as the exact bytes received: signatures are over raw bytes, never a re-serialisation.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // Authentication runs in preHandler, once the raw body bytes have been read.
  app.addHook('preHandler', async (req, reply) => {
    if (!req.url.startsWith('/v1/')) return;
    const result = await authenticate(req, { config: options.config, clock: options.clock, nonces });
    if (!result.ok) {
      return sendEnvelope(req, reply, {
        clock: options.clock,
        store: result.store,
        httpStatus: result.httpStatus,
        code: result.code,
        message: result.message,
        details: result.details,
      });
    }
    identities.set(req, result.identity);
  });

  const identity = (req: unknown): StoreIdentity => {
    const found = identities.get(req as FastifyRequest);
    if (!found) throw new Error('route reached without authentication');
    return found;
  };
  registerTestRoutes(app, { clock: options.clock, identity });

  app.setNotFoundHandler((req, reply) =>
    sendEnvelope(req, reply, {
      clock: options.clock,
      store: undefined,
      httpStatus: 404,
      code: 10001,
      message: 'Not found',
      details: { path: req.url },
    }),
  );
  return app;
}
