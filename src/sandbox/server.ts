import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { createMemoryNonceStore } from '../svc/signing/nonceStore.ts';
import { authenticate, type StoreIdentity } from './authenticate.ts';
import { sendEnvelope } from './envelope.ts';
import { createRateLimiter } from './rateLimiter.ts';
import type { RouteDeps } from './routes/routeDeps.ts';
import { SandboxApiError } from './sandboxApiError.ts';
import type { SandboxWorld } from './world.ts';

/** A module of routes: the test routes, checkout intents, claim links, the control API. */
export type RouteModule = (app: FastifyInstance, deps: RouteDeps) => void;

/**
 * The sandbox's HTTP face. Every /v1 request is, in order: authenticated exactly as the spec
 * says (headers, signature over the raw bytes, skew, nonce, IP allowlist), rate limited per key,
 * subjected to injected faults, and only then routed. Every /v1 answer is an envelope, signed for
 * stores with signed_response; no input crashes it (unexpected errors answer 90000).
 */
export function createSandboxServer(world: SandboxWorld, modules: RouteModule[]): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: 1024 * 1024,
    // Long ids must reach the routes (and get the spec's 50001/50107), not a bare 414.
    routerOptions: { maxParamLength: 10_000 },
    // A path that cannot be decoded still gets an envelope, never the framework's own error body.
    frameworkErrors: (err, req, reply) =>
      sendEnvelope(req, reply, {
        clock: world.clock,
        store: undefined,
        httpStatus: 400,
        code: 10001,
        message: 'Validation error',
        details: { request: err.message },
      }),
  });
  const nonces = createMemoryNonceStore(world.clock);
  const limiter = createRateLimiter(world.clock);
  const identities = new WeakMap<FastifyRequest, StoreIdentity>();
  const clock = world.clock;

  // Keep every body as the exact bytes received: signatures are over raw bytes, never a re-serialisation.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.addHook('preHandler', async (req, reply) => {
    if (!req.url.startsWith('/v1/')) return;
    const result = await authenticate(req, { config: world.config, clock, nonces });
    if (!result.ok) {
      return sendEnvelope(req, reply, {
        clock,
        store: result.store,
        httpStatus: result.httpStatus,
        code: result.code,
        message: result.message,
        details: result.details,
      });
    }
    const { store } = result.identity;
    identities.set(req, result.identity);
    const waitMs = limiter.take(store.api_key, store.rate_limit ?? world.config.rate_limit);
    if (waitMs > 0 || world.faults.rateLimitNext > 0) {
      if (waitMs === 0) world.faults.rateLimitNext--;
      const retryAfter = waitMs > 0 ? `${Math.max(1, Math.ceil(waitMs / 1000))}s` : world.faults.retryAfter;
      return sendEnvelope(req, reply, {
        clock,
        store,
        httpStatus: 429,
        code: 40001,
        message: 'Rate limit exceeded',
        details: { retry_after: retryAfter },
      });
    }
    const injected = world.faults.errorNext;
    if (injected && injected.count > 0) {
      injected.count--;
      if (injected.count === 0) world.faults.errorNext = null;
      const httpStatus = injected.code === 90000 || injected.code === 99999 ? 500 : 400;
      return sendEnvelope(req, reply, {
        clock,
        store,
        httpStatus,
        code: injected.code,
        message: injected.code === 99999 ? 'Unknown error' : 'Internal server error',
        details: {},
      });
    }
  });

  app.setErrorHandler((err, req, reply) => {
    if (!req.url.startsWith('/v1/')) {
      const status = (err as { statusCode?: number }).statusCode ?? 500;
      return reply.code(status >= 400 && status < 600 ? status : 500).send({ error: (err as Error).message });
    }
    const store = identities.get(req)?.store;
    if (err instanceof SandboxApiError) {
      return sendEnvelope(req, reply, {
        clock,
        store,
        httpStatus: err.httpStatus,
        code: err.code,
        message: err.message,
        details: err.details,
      });
    }
    const tooLarge = (err as { code?: string }).code === 'FST_ERR_CTP_BODY_TOO_LARGE';
    return sendEnvelope(req, reply, {
      clock,
      store,
      httpStatus: tooLarge ? 413 : 500,
      code: tooLarge ? 10001 : 90000,
      message: tooLarge ? 'Validation error' : 'Internal server error',
      details: tooLarge ? { body: 'too large' } : {},
    });
  });

  const deps: RouteDeps = {
    world,
    identity: (req) => {
      const found = identities.get(req);
      if (!found) throw new Error('route reached without authentication');
      return found;
    },
  };
  for (const register of modules) register(app, deps);

  app.setNotFoundHandler((req, reply) => {
    if (!req.url.startsWith('/v1/'))
      return reply.code(404).send({ error: `no route ${req.method} ${req.url}` });
    return sendEnvelope(req, reply, {
      clock,
      store: identities.get(req)?.store,
      httpStatus: 404,
      code: 10001,
      message: 'Validation error',
      details: { path: 'no such route' },
    });
  });
  return app;
}
