import { createCheckoutEngine } from './checkout/checkoutEngine.ts';
import { createClaimLinkEngine } from './claimLinks/claimLinkEngine.ts';
import { registerCheckoutControlRoutes } from './routes/checkoutControlRoutes.ts';
import { registerCheckoutRoutes } from './routes/checkoutRoutes.ts';
import { registerClaimLinkControlRoutes } from './routes/claimLinkControlRoutes.ts';
import { registerClaimLinkRoutes } from './routes/claimLinkRoutes.ts';
import { registerControlRoutes } from './routes/controlRoutes.ts';
import { registerTestRoutes } from './routes/testRoutes.ts';
import type { RouteModule } from './server.ts';
import type { SandboxWorld } from './world.ts';

/** Every route module of the sandbox, with the engines they share, built for one world. */
export function sandboxRouteModules(world: SandboxWorld): { modules: RouteModule[]; stop(): void } {
  const checkout = createCheckoutEngine(world);
  const claimLinks = createClaimLinkEngine(world);
  const modules: RouteModule[] = [
    registerTestRoutes,
    (app, deps) => registerCheckoutRoutes(app, { ...deps, checkout }),
    (app, deps) => registerClaimLinkRoutes(app, { ...deps, claimLinks }),
    registerControlRoutes,
    (app, deps) => registerCheckoutControlRoutes(app, { ...deps, checkout }),
    (app, deps) => registerClaimLinkControlRoutes(app, { ...deps, claimLinks }),
  ];
  return {
    modules,
    stop: () => {
      checkout.stop();
      claimLinks.stop();
    },
  };
}
