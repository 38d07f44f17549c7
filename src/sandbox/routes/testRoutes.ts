import type { FastifyInstance } from 'fastify';
import { rawBody, sendEnvelope } from '../envelope.ts';
import type { RouteDeps } from './routeDeps.ts';

/**
 * The spec's test routes (/v1/test): ping, an always-failing route, and an echo of the posted
 * JSON object. They exist to prove credentials, signing, replay protection and body hashing.
 */
export function registerTestRoutes(app: FastifyInstance, { world, identity }: RouteDeps): void {
  const clock = world.clock;
  app.get('/v1/test/ping', async (req, reply) =>
    sendEnvelope(req, reply, {
      clock,
      store: identity(req).store,
      httpStatus: 200,
      code: 0,
      payload: { pong: 'ok' },
    }),
  );

  app.get('/v1/test/fail', async (req, reply) =>
    sendEnvelope(req, reply, {
      clock,
      store: identity(req).store,
      httpStatus: 400,
      code: 10001,
      message: 'Validation error',
      details: {},
    }),
  );

  app.post('/v1/test/post', async (req, reply) => {
    const store = identity(req).store;
    let body: unknown;
    try {
      body = JSON.parse(rawBody(req).toString('utf8'));
    } catch {
      body = undefined;
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return sendEnvelope(req, reply, {
        clock,
        store,
        httpStatus: 400,
        code: 10001,
        message: 'Validation error',
        details: { body: 'must be a JSON object' },
      });
    }
    return sendEnvelope(req, reply, {
      clock,
      store,
      httpStatus: 200,
      code: 0,
      payload: { your_request_body: body },
    });
  });
}
