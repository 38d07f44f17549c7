import { describe, expect, it } from 'vitest';
import { addressSchema, eip155ChainIdSchema, txHashSchema } from '../../../../src/svc/models/onChain.ts';

const checksummed = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const hash = '0x9f1c3ad8e2b4f6071a8c5d3e2f1b0a9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a';

describe('addressSchema', () => {
  it('behavior: keeps the case as received', () => {
    expect(addressSchema.parse(checksummed)).toBe(checksummed);
    expect(addressSchema.parse(checksummed.toLowerCase())).toBe(checksummed.toLowerCase());
  });

  it.each([
    checksummed.slice(2),
    `${checksummed}00`,
    checksummed.slice(0, 41),
    '0xZZ3589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    hash,
    42,
  ])('error: rejects %j', (v) => {
    expect(addressSchema.safeParse(v).success).toBe(false);
  });
});

describe('txHashSchema', () => {
  it('behavior: accepts 32-byte hex, case kept', () => {
    expect(txHashSchema.parse(hash.toUpperCase().replace('0X', '0x'))).toBe(
      hash.toUpperCase().replace('0X', '0x'),
    );
  });

  it.each([checksummed, hash.slice(0, 65), `${hash}a`, hash.slice(2)])('error: rejects %j', (v) => {
    expect(txHashSchema.safeParse(v).success).toBe(false);
  });
});

describe('eip155ChainIdSchema', () => {
  it('behavior: positive integers', () => {
    expect(eip155ChainIdSchema.parse(8453)).toBe(8453);
  });

  it.each([0, -1, 1.5, '8453'])('error: rejects %j', (v) => {
    expect(eip155ChainIdSchema.safeParse(v).success).toBe(false);
  });
});
