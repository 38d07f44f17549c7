import type { FastifyInstance, FastifyReply } from 'fastify';
import { getAddress, isAddress } from 'viem';
import { z } from 'zod';
import { FUNDING_REASON_CODES } from '../../svc/models/errorDetails.ts';
import { ClaimLinkControlError, type ClaimLinkEngine } from '../claimLinks/claimLinkEngine.ts';
import { claimLinkSettingsPatchSchema } from '../claimLinks/claimLinkSettings.ts';
import { rawBody } from '../envelope.ts';
import { parseControlBody } from './parseControlBody.ts';
import type { RouteDeps } from './routeDeps.ts';

/**
 * Control API for claim links (plain JSON, unsigned; errors are 400/404/409 with {error}):
 * - POST /_sandbox/claim_links/{id}/claim `{recipient?, stop_at?: "claiming"}`: the recipient claims;
 * - GET /_sandbox/claim_links, GET /_sandbox/claim_links/{id}: links with status, wallets, amounts
 *   and tx hashes, never the bearer token;
 * - POST /_sandbox/claim_links/fail_next `{reason_code?, plutus_code?, reason?, count?}`: the next
 *   creates that would fund answer 50103 with these details, before any funds move;
 * - GET|POST /_sandbox/claim_links/config: scanner and refund delays, expiry, funding fee.
 */
const claimBodySchema = z
  .object({
    recipient: z
      .string()
      .refine((a) => isAddress(a, { strict: false }), { error: 'must be a 0x-prefixed 20-byte address' })
      .transform((a) => getAddress(a))
      .optional(),
    /** Leave the link in claiming (payout not yet sent); a second claim completes it. */
    stop_at: z.literal('claiming').optional(),
  })
  .strict();

const failNextBodySchema = z
  .object({
    reason_code: z.union([z.enum(FUNDING_REASON_CODES), z.string().min(1)]).optional(),
    plutus_code: z.int().optional(),
    reason: z.string().min(1).optional(),
    count: z.int().min(1).default(1),
  })
  .strict();

export function registerClaimLinkControlRoutes(
  app: FastifyInstance,
  deps: Pick<RouteDeps, 'world'> & { claimLinks: ClaimLinkEngine },
): void {
  const engine = deps.claimLinks;
  const fail = (reply: FastifyReply, status: number, error: string) => reply.code(status).send({ error });

  app.get('/_sandbox/claim_links', async () => ({ claim_links: engine.list() }));

  app.get('/_sandbox/claim_links/config', async () => engine.settings());

  app.post('/_sandbox/claim_links/config', async (req, reply) => {
    const body = parseControlBody(claimLinkSettingsPatchSchema, rawBody(req));
    if (!body.ok) return fail(reply, 400, body.error);
    return engine.configure(body.data);
  });

  app.post('/_sandbox/claim_links/fail_next', async (req, reply) => {
    const body = parseControlBody(failNextBodySchema, rawBody(req));
    if (!body.ok) return fail(reply, 400, body.error);
    engine.failNext({
      reason: body.data.reason,
      reasonCode: body.data.reason_code,
      plutusCode: body.data.plutus_code,
      count: body.data.count,
    });
    return { queued: body.data.count };
  });

  app.get<{ Params: { id: string } }>('/_sandbox/claim_links/:id', async (req, reply) => {
    const link = engine.get(req.params.id);
    return link ?? fail(reply, 404, `no claim link ${req.params.id}`);
  });

  app.post<{ Params: { id: string } }>('/_sandbox/claim_links/:id/claim', async (req, reply) => {
    const body = parseControlBody(claimBodySchema, rawBody(req));
    if (!body.ok) return fail(reply, 400, body.error);
    try {
      return await engine.claim(req.params.id, { recipient: body.data.recipient, stopAt: body.data.stop_at });
    } catch (err) {
      if (err instanceof ClaimLinkControlError) return fail(reply, err.httpStatus, err.message);
      throw err;
    }
  });
}
