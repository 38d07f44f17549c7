import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { DECIMAL_STRING_RE } from '../../money/decimalAmount.ts';
import { CheckoutStatus, type CheckoutStatusName } from '../../svc/models/checkoutStatus.ts';
import { PaymentMethodType } from '../../svc/models/paymentMethodType.ts';
import { StableCoin } from '../../svc/models/stableCoin.ts';
import { CheckoutControlError } from '../checkout/checkoutControlError.ts';
import type { CheckoutEngine } from '../checkout/checkoutEngine.ts';
import { rawBody } from '../envelope.ts';
import { parseControlBody } from './parseControlBody.ts';
import type { RouteDeps } from './routeDeps.ts';

/**
 * Control API for checkout intents (plain JSON, unsigned):
 * - GET  /_sandbox/intents/:id          the intent with its status history and wallets;
 * - POST /_sandbox/intents/:id/pay      a buyer pays on chain (real transfers), answers once mined;
 * - POST /_sandbox/intents/:id/status   force a status, by name ("VIEWED") or integer.
 * Bad input is 400, an unknown intent 404, the wrong state 409, always as `{error}`.
 */
const coinSchema = z.union([
  z.literal(StableCoin.USDT),
  z.literal(StableCoin.USDC),
  z.enum(['USDT', 'USDC']).transform((symbol) => StableCoin[symbol]),
]);

export const payIntentRequestSchema = z
  .object({
    /** Gross amount the buyer sends, a decimal string ("12.5"); default: the requested amount. */
    amount: z
      .string({ error: 'amount must be a decimal string such as "12.5"' })
      .regex(DECIMAL_STRING_RE, { error: 'amount must be a plain decimal string such as "12.5"' })
      .optional(),
    /** 1, 2, "USDT" or "USDC"; default: the intent's coin when accepted, else the first accepted. */
    coin: coinSchema.optional(),
    /** EIP-155 id of a simulated chain; default: the intent's chain. */
    chain_id: z.int().positive().optional(),
    route: z.enum(['temp_wallet', 'direct']).optional(),
    /** Default: confirmed, or underpaid when amount is below the requested amount. */
    outcome: z.enum(['confirmed', 'underpaid', 'rejected', 'manual']).optional(),
    /** PaymentMethodType reported once paid (default 1, WALLET_SCAN). */
    payment_method_type: z.enum(PaymentMethodType).optional(),
    /** The service confirms an amount below the requested one instead of sending it back. */
    accept_underpayment: z.boolean().optional(),
    /**
     * A decimal string the service reports as net_income_amount instead of P - F (the transfers
     * are unchanged): a fee arithmetic mismatch for the merchant's books to catch.
     */
    reported_net_income: z
      .string({ error: 'reported_net_income must be a decimal string such as "9.5"' })
      .regex(DECIMAL_STRING_RE, { error: 'reported_net_income must be a plain decimal string such as "9.5"' })
      .optional(),
  })
  .strict();

const statusNames = Object.keys(CheckoutStatus) as [CheckoutStatusName, ...CheckoutStatusName[]];
export const forceStatusRequestSchema = z
  .object({
    status: z.union([z.enum(CheckoutStatus), z.enum(statusNames).transform((name) => CheckoutStatus[name])]),
  })
  .strict();

export function registerCheckoutControlRoutes(
  app: FastifyInstance,
  deps: Pick<RouteDeps, 'world'> & { checkout: CheckoutEngine },
): void {
  const { checkout } = deps;

  app.get<{ Params: { id: string } }>('/_sandbox/intents/:id', async (req, reply) =>
    answer(reply, () => checkout.inspect(req.params.id)),
  );

  app.post<{ Params: { id: string } }>('/_sandbox/intents/:id/pay', async (req, reply) =>
    answer(reply, () => {
      const body = parseBody(req, payIntentRequestSchema);
      return checkout.pay(req.params.id, {
        amount: body.amount,
        coin: body.coin,
        chainId: body.chain_id,
        route: body.route,
        outcome: body.outcome,
        paymentMethodType: body.payment_method_type,
        acceptUnderpayment: body.accept_underpayment,
        reportedNetIncome: body.reported_net_income,
      });
    }),
  );

  app.post<{ Params: { id: string } }>('/_sandbox/intents/:id/status', async (req, reply) =>
    answer(reply, () => checkout.forceStatus(req.params.id, parseBody(req, forceStatusRequestSchema).status)),
  );
}

async function answer(reply: FastifyReply, work: () => unknown): Promise<FastifyReply> {
  try {
    const result = await work();
    return reply.code(200).type('application/json').send(JSON.stringify(result));
  } catch (err) {
    if (err instanceof CheckoutControlError) {
      return reply
        .code(err.httpStatus)
        .type('application/json')
        .send(JSON.stringify({ error: err.message }));
    }
    throw err;
  }
}

/** The JSON body checked by `schema`; a 400 with the first problem otherwise. */
function parseBody<S extends z.ZodType>(req: FastifyRequest, schema: S): z.output<S> {
  const result = parseControlBody(schema, rawBody(req));
  if (!result.ok) throw new CheckoutControlError(400, result.error);
  return result.data;
}
