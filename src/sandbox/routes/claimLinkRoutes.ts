import type { FastifyInstance } from 'fastify';
import type { ClaimLinkEngine } from '../claimLinks/claimLinkEngine.ts';
import { renderClaimPage } from '../claimLinks/claimPage.ts';
import { rawBody, sendEnvelope } from '../envelope.ts';
import type { RouteDeps } from './routeDeps.ts';

/**
 * The spec's claim-link auto-payout routes (create and cancel), signed like every /v1 route, and
 * the unsigned page behind each claim_url (GET /claim/{token}). Engine errors are SandboxApiErrors,
 * which the server renders as envelopes.
 */
export function registerClaimLinkRoutes(
  app: FastifyInstance,
  deps: RouteDeps & { claimLinks: ClaimLinkEngine },
): void {
  const { world, claimLinks } = deps;

  app.post('/v1/claim_link_auto_payouts', async (req, reply) => {
    const identity = deps.identity(req);
    const payload = await claimLinks.create(identity, rawBody(req));
    return sendEnvelope(req, reply, {
      clock: world.clock,
      store: identity.store,
      httpStatus: 200,
      code: 0,
      payload,
    });
  });

  // A wildcard rather than `:id`: Fastify refuses parameters longer than maxParamLength (414)
  // before any handler runs, and every malformed id must get the same 50107 as an unknown one.
  app.post<{ Params: { '*': string } }>('/v1/claim_link_auto_payouts/*', async (req, reply) => {
    const match = /^(.*)\/cancel$/s.exec(req.params['*']);
    if (!match) return reply.callNotFound();
    const identity = deps.identity(req);
    const payload = claimLinks.cancel(identity, match[1] ?? '', rawBody(req));
    return sendEnvelope(req, reply, {
      clock: world.clock,
      store: identity.store,
      httpStatus: 200,
      code: 0,
      payload,
    });
  });

  app.get<{ Params: { token: string } }>('/claim/:token', async (req, reply) => {
    const page = renderClaimPage(claimLinks.byToken(req.params.token));
    return reply
      .code(page.status)
      .headers({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
      .type('text/html; charset=utf-8')
      .send(page.html);
  });
}
