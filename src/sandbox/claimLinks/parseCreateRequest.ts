import { AmountFormatError, parseDecimalAmount } from '../../money/decimalAmount.ts';
import { createClaimLinkRequestSchema } from '../../svc/models/claimLink.ts';
import { type ServiceChainInfo, serviceChainInfo } from '../../svc/models/serviceChain.ts';
import { type StableCoin, stableCoinSymbol } from '../../svc/models/stableCoin.ts';
import type { CoinSymbol, SandboxChain } from '../chain/types.ts';
import { validationError } from '../sandboxApiError.ts';
import type { SandboxConfig } from '../sandboxConfig.ts';

/**
 * The body of POST /v1/claim_link_auto_payouts, checked as the spec's table says. Every failure is
 * 10001 with details {field, reason} naming the first offending field.
 *
 * The field rules are the project's own request schema (src/svc/models/claimLink.ts: amount a
 * decimal string and never a JSON number, stable_coin and chain integers of their enums,
 * reference_id 1 to 128 printable ASCII without spaces, the text field lengths). The rules that
 * need the service's side come after: Sepolia (11) only on a test environment, the chain simulated
 * by this sandbox, and the amount no finer than the token's decimals on that chain.
 */
export interface CreateRequest {
  serviceChain: ServiceChainInfo;
  chain: SandboxChain;
  coin: StableCoin;
  symbol: CoinSymbol;
  /** Base units of the token on this chain. */
  amount: bigint;
  referenceId: string;
  receiverEmail: string | null;
  senderDisplayName: string | null;
  senderMessage: string | null;
}

export function parseCreateRequest(
  rawBody: Buffer,
  world: { config: SandboxConfig; chains: Map<number, SandboxChain> },
): CreateRequest {
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw validationError({ field: 'body', reason: 'invalid JSON body' });
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw validationError({ field: 'body', reason: 'body must be a JSON object' });
  }
  const parsed = createClaimLinkRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw validationError({
      field: issue?.path.join('.') || 'body',
      reason: issue?.message ?? 'invalid request',
    });
  }
  const request = parsed.data;

  const info = serviceChainInfo(request.chain);
  if (info.testOnly && world.config.environment !== 'test') {
    throw validationError({
      field: 'chain',
      reason: `chain ${info.serviceChain} (${info.name}) is accepted on test environments only`,
    });
  }
  const chain = world.chains.get(info.chainId);
  if (!chain) {
    const simulated = [...world.chains.keys()].join(', ') || 'none';
    throw validationError({
      field: 'chain',
      reason: `chain ${info.serviceChain} (${info.name}, EIP-155 ${info.chainId}) is not simulated by this sandbox (simulated EIP-155 chains: ${simulated})`,
    });
  }
  let amount: bigint;
  try {
    // The service's create refuses any digit past the token's decimals, a zero too; our own
    // parser reads zeros there as the exact value they are, so the sandbox checks the length.
    if ((request.amount.split('.')[1]?.length ?? 0) > chain.decimals) {
      throw new AmountFormatError('more digits than the token has', request.amount, chain.decimals);
    }
    amount = parseDecimalAmount(request.amount, chain.decimals);
  } catch (err) {
    if (!(err instanceof AmountFormatError)) throw err;
    throw validationError({
      field: 'amount',
      reason: `amount has more precision than the token's ${chain.decimals} decimals on ${info.name}`,
    });
  }
  return {
    serviceChain: info,
    chain,
    coin: request.stable_coin,
    symbol: stableCoinSymbol(request.stable_coin),
    amount,
    referenceId: request.reference_id,
    receiverEmail: request.receiver_email ?? null,
    senderDisplayName: request.sender_display_name ?? null,
    senderMessage: request.sender_message ?? null,
  };
}
