import type { FastifyInstance, FastifyReply } from 'fastify';
import { bearer, matches } from '../http/bearer.ts';
import type { Logger } from '../logging/logger.ts';
import { parseInput } from './input.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { API_PREFIX, NotFound } from './route.ts';
import { type ReadApiDomain, readApiRoutes } from './routes.ts';

/** The version of the read API's document; a change that breaks a client is a new API_PREFIX. */
export const READ_API_VERSION = '1.0.0';

/**
 * The read-only HTTP API under /api/v1 on the daemon's operations port, behind API_TOKEN (a
 * token of its own, not ADMIN_TOKEN). Without a token nothing is registered (every path is 404).
 * Every request, the OpenAPI document's included, needs `Authorization: Bearer <API_TOKEN>`
 * (compared in constant time); anything else is 401 with `WWW-Authenticate`, unknown paths under
 * the prefix included, so nothing can be probed without the token. Only GET (and HEAD). A bad
 * param or query is 400 naming the parameter, an unknown id 404; both `{ ok: false, reason }`.
 * Nothing here logs a request or the token; a 500 logs its error only.
 */
export async function registerReadApi(
  app: FastifyInstance,
  deps: { token: string | undefined; domain: ReadApiDomain; logger?: Logger },
): Promise<void> {
  const { token } = deps;
  if (!token) return;
  let document: Record<string, unknown> | undefined;
  const routes = readApiRoutes(deps.domain, () => {
    document ??= buildOpenApiDocument(routes, READ_API_VERSION);
    return document;
  });
  // Built once, at start: a schema zod cannot convert fails the daemon's start, not a request.
  document = buildOpenApiDocument(routes, READ_API_VERSION);

  await app.register(
    async (api) => {
      api.addHook('onRequest', async (req, reply) => {
        reply.header('cache-control', 'no-store');
        if (!matches(bearer(req), token)) {
          return reply
            .code(401)
            .header('www-authenticate', 'Bearer realm="stablebooks api"')
            .send({ ok: false, reason: 'API token required: Authorization: Bearer <API_TOKEN>' });
        }
      });
      api.setNotFoundHandler((_req, reply) => reply.code(404).send({ ok: false, reason: 'not found' }));
      api.setErrorHandler((err, _req, reply) => {
        const status = (err as { statusCode?: number }).statusCode;
        if (status && status >= 400 && status < 500)
          return reply.code(status).send({ ok: false, reason: (err as Error).message });
        deps.logger?.error({ err }, 'read API: request failed');
        return reply.code(500).send({ ok: false, reason: 'internal error; the request can be retried' });
      });
      for (const route of routes) {
        api.get(route.path.replace(/\{(\w+)\}/g, ':$1'), async (req, reply) => {
          const params = route.params ? parseInput(route.params, req.params) : undefined;
          if (params && !params.ok) return badRequest(reply, params.reason);
          const query = route.query
            ? parseInput(route.query, req.query)
            : emptyQuery(req.query as Record<string, unknown> | undefined);
          if (query && !query.ok) return badRequest(reply, query.reason);
          const out = await route.handle({ params: params?.value, query: query?.value });
          if (out instanceof NotFound) return reply.code(404).send({ ok: false, reason: out.reason });
          return reply.code(200).send(out);
        });
      }
    },
    { prefix: API_PREFIX },
  );
}

function badRequest(reply: FastifyReply, reason: string) {
  return reply.code(400).send({ ok: false, reason });
}

/** A route without a query takes none: a parameter given anyway is a 400, as on the others. */
function emptyQuery(query: Record<string, unknown> | undefined) {
  const keys = Object.keys(query ?? {});
  if (keys.length === 0) return undefined;
  return { ok: false as const, reason: `${keys.join(', ')}: unknown parameter${keys.length > 1 ? 's' : ''}` };
}
