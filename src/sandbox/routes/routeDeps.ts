import type { FastifyRequest } from 'fastify';
import type { StoreIdentity } from '../authenticate.ts';
import type { SandboxWorld } from '../world.ts';

/**
 * What every route module receives. Signed /v1 routes read the authenticated store with
 * identity(req); they answer with sendEnvelope (src/sandbox/envelope.ts) and throw
 * SandboxApiError (src/sandbox/sandboxApiError.ts) for errors, which the server renders as an
 * envelope (signed for stores with signed_response). Control routes (/_sandbox/...) answer plain
 * JSON and need no identity.
 */
export interface RouteDeps {
  world: SandboxWorld;
  identity(req: FastifyRequest): StoreIdentity;
}
