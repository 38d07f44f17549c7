import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CheckoutStatus } from '../../svc/models/checkoutStatus.ts';
import type { CheckoutEngine } from '../checkout/checkoutEngine.ts';
import { renderHostedCheckoutPage, renderUnknownCheckoutPage } from '../checkout/hostedCheckoutPage.ts';
import { rawBody, sendEnvelope } from '../envelope.ts';
import type { RouteDeps } from './routeDeps.ts';

/**
 * The spec's checkout-intent routes (signed, enveloped) and the hosted checkout page (unsigned
 * HTML at checkout_url). Errors are thrown as SandboxApiError by the engine and rendered by the
 * server as envelopes.
 */
export function registerCheckoutRoutes(
  app: FastifyInstance,
  deps: RouteDeps & { checkout: CheckoutEngine },
): void {
  const { world, checkout } = deps;
  const ok = (req: FastifyRequest, reply: FastifyReply, payload: unknown) =>
    sendEnvelope(req, reply, {
      clock: world.clock,
      store: deps.identity(req).store,
      httpStatus: 200,
      code: 0,
      payload,
    });

  const create = async (req: FastifyRequest, reply: FastifyReply) =>
    ok(req, reply, await checkout.create(deps.identity(req), rawBody(req)));
  // The spec writes the path with a trailing slash; the bare form is accepted too.
  app.post('/v1/checkout_intents/', create);
  if (!app.hasRoute({ method: 'POST', url: '/v1/checkout_intents' }))
    app.post('/v1/checkout_intents', create);

  app.get<{ Params: { id: string } }>('/v1/checkout_intents/:id', async (req, reply) => {
    const intent = checkout.get(deps.identity(req), req.params.id);
    if (intent.status === CheckoutStatus.CONFIRMED && world.faults.withholdAmountsNext > 0) {
      world.faults.withholdAmountsNext--;
      return ok(req, reply, {
        ...intent,
        actual_paid_amount: null,
        service_fee_amount: null,
        net_income_amount: null,
      });
    }
    return ok(req, reply, intent);
  });
  app.get<{ Params: { id: string } }>('/v1/checkout_intents/:id/status', async (req, reply) =>
    ok(req, reply, checkout.status(deps.identity(req), req.params.id)),
  );

  app.get<{ Params: { id: string } }>('/checkout/:id', async (req, reply) => {
    // Fastify answers HEAD through this handler too; only a real GET counts as the buyer viewing.
    const intent = req.method === 'GET' ? checkout.view(req.params.id) : checkout.peek(req.params.id);
    reply.type('text/html; charset=utf-8').header('Cache-Control', 'no-store');
    if (!intent) return reply.code(404).send(renderUnknownCheckoutPage());
    return reply.code(200).send(renderHostedCheckoutPage(intent));
  });
}
