/**
 * Service Chain enum: the service's own chain numbering, taken only by claim-link create. Intents,
 * webhooks and claim-link results carry EIP-155 chain ids instead. This table is the one place the
 * two numberings meet (docs/accounting.md, "Money"); nothing else may hard-code the pairs.
 */
import { z } from 'zod';
import { StablebooksError } from '../../errors/stablebooksError.ts';

export const SERVICE_CHAINS = [
  { serviceChain: 1, chainId: 1, name: 'Ethereum', testOnly: false },
  { serviceChain: 5, chainId: 8453, name: 'Base', testOnly: false },
  { serviceChain: 6, chainId: 56, name: 'BNB', testOnly: false },
  { serviceChain: 7, chainId: 42161, name: 'Arbitrum', testOnly: false },
  { serviceChain: 8, chainId: 137, name: 'Polygon', testOnly: false },
  { serviceChain: 9, chainId: 10, name: 'Optimism', testOnly: false },
  // The service accepts Sepolia on its test environments only; production rejects it.
  { serviceChain: 11, chainId: 11155111, name: 'Sepolia', testOnly: true },
] as const;

export type ServiceChainInfo = (typeof SERVICE_CHAINS)[number];
export type ServiceChain = ServiceChainInfo['serviceChain'];
export type ServiceChainEip155Id = ServiceChainInfo['chainId'];

const SERVICE_CHAIN_VALUES = SERVICE_CHAINS.map((c) => c.serviceChain);

export class UnknownChainError extends StablebooksError {
  override readonly name = 'UnknownChainError';
  readonly retryable = false;
}

function describe(value: number): string {
  return Number.isFinite(value) ? String(value) : JSON.stringify(String(value));
}

export function serviceChainInfo(serviceChain: number): ServiceChainInfo {
  const info = SERVICE_CHAINS.find((c) => c.serviceChain === serviceChain);
  if (info === undefined) {
    throw new UnknownChainError(
      `service Chain enum value ${describe(serviceChain)} is not in the mapping table ` +
        `(known: ${SERVICE_CHAIN_VALUES.join(', ')}); add it to src/svc/models/serviceChain.ts`,
    );
  }
  return info;
}

export function serviceChainToEip155(serviceChain: number): ServiceChainEip155Id {
  return serviceChainInfo(serviceChain).chainId;
}

export function eip155ToServiceChain(chainId: number): ServiceChain {
  const info = SERVICE_CHAINS.find((c) => c.chainId === chainId);
  if (info === undefined) {
    throw new UnknownChainError(
      `EIP-155 chain id ${describe(chainId)} has no service Chain enum value ` +
        `(supported: ${SERVICE_CHAINS.map((c) => `${c.chainId} ${c.name}`).join(', ')})`,
    );
  }
  return info.serviceChain;
}

/**
 * Integer service Chain enum value. Test-only chains pass here: whether Sepolia is allowed depends
 * on the environment, which the caller knows and checks through `testOnly`.
 */
export const serviceChainSchema = z.literal(SERVICE_CHAIN_VALUES, {
  error: `must be a service Chain enum integer (${SERVICE_CHAIN_VALUES.join(', ')})`,
});
