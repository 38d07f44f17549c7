/**
 * On-chain identifiers the service reports: EVM addresses, transaction hashes and EIP-155 chain
 * ids. Case is kept as received: a mixed-case address carries an EIP-55 checksum that later
 * verification may want, so normalising is left to whoever compares.
 */
import { z } from 'zod';

export const addressSchema = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, { error: 'must be a 0x-prefixed 20-byte hex address' });

export const txHashSchema = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, { error: 'must be a 0x-prefixed 32-byte hex transaction hash' });

export const eip155ChainIdSchema = z.int().positive({ error: 'must be a positive EIP-155 chain id' });

export type Address = z.output<typeof addressSchema>;
export type TxHash = z.output<typeof txHashSchema>;
