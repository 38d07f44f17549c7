import { describe, expect, it } from 'vitest';
import {
  eip155ToServiceChain,
  SERVICE_CHAINS,
  serviceChainInfo,
  serviceChainSchema,
  serviceChainToEip155,
  UnknownChainError,
} from '../../../../src/svc/models/serviceChain.ts';

describe('service Chain enum <-> EIP-155', () => {
  it.each([
    [1, 1, 'Ethereum'],
    [5, 8453, 'Base'],
    [6, 56, 'BNB'],
    [7, 42161, 'Arbitrum'],
    [8, 137, 'Polygon'],
    [9, 10, 'Optimism'],
    [11, 11155111, 'Sepolia'],
  ])('behavior: service %i is chain id %i (%s), both ways', (serviceChain, chainId, name) => {
    expect(serviceChainToEip155(serviceChain)).toBe(chainId);
    expect(eip155ToServiceChain(chainId)).toBe(serviceChain);
    expect(serviceChainInfo(serviceChain).name).toBe(name);
  });

  it('behavior: only Sepolia is test-only', () => {
    expect(SERVICE_CHAINS.filter((c) => c.testOnly).map((c) => c.serviceChain)).toEqual([11]);
  });

  it('behavior: the table is one-to-one', () => {
    expect(new Set(SERVICE_CHAINS.map((c) => c.serviceChain)).size).toBe(SERVICE_CHAINS.length);
    expect(new Set(SERVICE_CHAINS.map((c) => c.chainId)).size).toBe(SERVICE_CHAINS.length);
  });

  it('error: unknown service Chain value', () => {
    expect(() => serviceChainToEip155(2)).toThrow(UnknownChainError);
    expect(() => serviceChainToEip155(2)).toThrow(/service Chain enum value 2 .*known: 1, 5, 6, 7, 8, 9, 11/);
    // An EIP-155 id is not a service Chain value: 8453 must not pass as one.
    expect(() => serviceChainToEip155(8453)).toThrow(UnknownChainError);
  });

  it('error: unknown EIP-155 chain id', () => {
    expect(() => eip155ToServiceChain(5)).toThrow(/EIP-155 chain id 5 has no service Chain enum value/);
    expect(() => eip155ToServiceChain(Number.NaN)).toThrow(UnknownChainError);
  });
});

describe('serviceChainSchema', () => {
  it('behavior: accepts every table value', () => {
    for (const c of SERVICE_CHAINS) expect(serviceChainSchema.parse(c.serviceChain)).toBe(c.serviceChain);
  });

  it.each([0, 2, 3, 4, 10, 12, 8453, 1.5, -1, '1', 'Ethereum', null])('error: rejects %j', (value) => {
    const result = serviceChainSchema.safeParse(value);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/service Chain enum integer/);
  });
});
