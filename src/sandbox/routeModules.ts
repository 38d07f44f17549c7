import { registerControlRoutes } from './routes/controlRoutes.ts';
import { registerTestRoutes } from './routes/testRoutes.ts';
import type { RouteModule } from './server.ts';
import type { SandboxWorld } from './world.ts';

/** Every route module of the sandbox, with the engines they share, built for one world. */
export function sandboxRouteModules(_world: SandboxWorld): RouteModule[] {
  return [registerTestRoutes, registerControlRoutes];
}
