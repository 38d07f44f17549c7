import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import { applyFaults, faultsRequestSchema } from '../faults.ts';
import { custodyWallet, merchantWallet } from '../world.ts';
import { parseControlBody } from './parseControlBody.ts';
import type { RouteDeps } from './routeDeps.ts';

/**
 * The control API under /_sandbox (plain JSON, unsigned): the chains and wallets, the clock,
 * injected faults, chain reorgs and the webhook delivery log. Intent and claim-link scenarios
 * live beside their engines (checkoutControlRoutes.ts, claimLinkControlRoutes.ts).
 */
export function registerControlRoutes(app: FastifyInstance, { world }: RouteDeps): void {
  app.get('/_sandbox/chains', async () =>
    [...world.chains.values()].map((c) => ({
      chain_id: c.chainId,
      rpc_url: c.rpcUrl,
      tokens: { USDT: c.tokens.USDT.address, USDC: c.tokens.USDC.address },
      decimals: c.decimals,
    })),
  );

  app.get('/_sandbox/stores', async () => {
    const out = [];
    for (const business of world.config.businesses) {
      for (const store of business.stores) {
        const wallets: Record<string, unknown> = {};
        for (const chain of world.chains.values()) {
          const merchant = await merchantWallet(chain, store.store_id);
          const custody = await custodyWallet(chain, business.business_id);
          const balances = async (address: `0x${string}`) => ({
            USDT: formatDecimalAmount(await chain.balanceOf('USDT', address), chain.decimals),
            USDC: formatDecimalAmount(await chain.balanceOf('USDC', address), chain.decimals),
          });
          wallets[String(chain.chainId)] = {
            merchant: { address: merchant, balances: await balances(merchant) },
            custody: { address: custody, balances: await balances(custody) },
          };
        }
        out.push({
          business_id: business.business_id,
          store_id: store.store_id,
          api_key: store.api_key,
          wallets,
        });
      }
    }
    return out;
  });

  app.get('/_sandbox/clock', async () => ({ now: world.clock.now().toISOString() }));
  app.post('/_sandbox/clock/advance', async (req, reply) => {
    const body = parse(
      reply,
      z.object({
        seconds: z
          .number()
          .nonnegative()
          .max(10 * 365 * 86400),
      }),
      req.body,
    );
    if (!body) return reply;
    await world.clock.advance(body.seconds);
    return { now: world.clock.now().toISOString() };
  });

  app.post('/_sandbox/faults', async (req, reply) => {
    const body = parse(reply, faultsRequestSchema, req.body);
    if (!body) return reply;
    applyFaults(world.faults, body);
    return world.faults;
  });

  app.post('/_sandbox/chain/reorg', async (req, reply) => {
    const body = parse(reply, z.object({ chain_id: z.int(), depth: z.int().min(1).max(1000) }), req.body);
    if (!body) return reply;
    const chain = world.chains.get(body.chain_id);
    if (!chain) return reply.code(404).send({ error: `chain ${body.chain_id} is not simulated` });
    const { orphanedBlocks } = await chain.reorg(body.depth);
    return { chain_id: body.chain_id, orphaned_blocks: orphanedBlocks.map(String) };
  });

  app.post('/_sandbox/chain/mine', async (req, reply) => {
    const body = parse(reply, z.object({ chain_id: z.int(), blocks: z.int().min(1).max(10_000) }), req.body);
    if (!body) return reply;
    const chain = world.chains.get(body.chain_id);
    if (!chain) return reply.code(404).send({ error: `chain ${body.chain_id} is not simulated` });
    await chain.mine(body.blocks);
    return { chain_id: body.chain_id, head: String(await chain.headBlock()) };
  });

  app.get('/_sandbox/webhooks', async () =>
    world.webhooks.list().map((d) => ({
      webhook_id: d.webhookId,
      kind: d.kind,
      store_id: d.storeId,
      url: d.url,
      state: d.state,
      next_attempt_at: d.nextAttemptAt,
      body: JSON.parse(d.body) as unknown,
      attempts: d.attempts.map((a) => ({
        at: a.at,
        status: a.status,
        error: a.error,
        response_body: a.responseBody,
        duplicate: a.duplicate,
      })),
    })),
  );
  app.post('/_sandbox/webhooks/:id/redeliver', async (req, reply) => {
    const { id } = req.params as { id: string };
    const delivery = await world.webhooks.redeliver(id);
    if (!delivery) return reply.code(404).send({ error: `no webhook ${id}` });
    return { webhook_id: delivery.webhookId, state: delivery.state, attempts: delivery.attempts.length };
  });
}

/** Parses a control request body (raw bytes) with a schema, or answers 400 with the reason. */
function parse<S extends z.ZodType>(reply: FastifyReply, schema: S, body: unknown): z.output<S> | undefined {
  const result = parseControlBody(schema, Buffer.isBuffer(body) ? body : Buffer.alloc(0));
  if (!result.ok) {
    void reply.code(400).send({ error: result.error });
    return undefined;
  }
  return result.data;
}
