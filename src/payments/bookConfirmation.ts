import type { ChainRegistry } from '../chain/registry.ts';
import type { DbExecutor } from '../db/database.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import type { RuleFinding } from '../ledger/entryDraft.ts';
import { type PostedEntry, postEntry } from '../ledger/postEntry.ts';
import { checkoutConfirmed } from '../ledger/rules/checkoutRules.ts';

/** What rule 1 needs of a CONFIRMED intent, as stored in checkout_intents (decimal strings as sent). */
export interface ConfirmedIntentFacts {
  intentId: string;
  storeId: string;
  chainId: number | null;
  coinContract: string | null;
  coinSymbol: string | null;
  amountCoins: string;
  actualPaidAmount: string | null;
  serviceFeeAmount: string | null;
  netIncomeAmount: string | null;
  amountCents: bigint | null;
  currency: number | null;
  currencyRate: string | null;
  txHash: string | null;
  txHash2: string | null;
  /** When we first saw CONFIRMED: the entry's occurred_at, fixed once. */
  confirmedAt: Date;
}

/**
 * Posts rule 1 for a confirmed intent, from a webhook, a poll or the chain. `provenNet` is what
 * the chain proved reached the merchant wallet: it settles an intent whose reported P - F != N.
 * Returns the findings for the caller to record beside the fact.
 */
export async function bookConfirmation(
  tx: DbExecutor,
  deps: { chains: ChainRegistry; accounts?: AccountCache },
  facts: ConfirmedIntentFacts,
  provenNet?: bigint,
): Promise<{ posted: PostedEntry | null; findings: RuleFinding[] }> {
  const ref = { type: 'checkout_intent', id: facts.intentId };
  const token =
    facts.chainId !== null && facts.coinContract
      ? deps.chains.token(facts.chainId, facts.coinContract)
      : undefined;
  if (!token) {
    return {
      posted: null,
      findings: [
        {
          kind: 'unknown_token',
          severity: 'critical',
          ref,
          details: {
            chain_id: facts.chainId,
            coin_contract: facts.coinContract,
            coin_symbol: facts.coinSymbol,
          },
        },
      ],
    };
  }
  if (facts.actualPaidAmount === null || facts.serviceFeeAmount === null || facts.netIncomeAmount === null) {
    return {
      posted: null,
      findings: [{ kind: 'confirmed_without_amounts', severity: 'warning', ref, details: { status: 20 } }],
    };
  }
  const outcome = checkoutConfirmed({
    storeId: facts.storeId,
    intentId: facts.intentId,
    occurredAt: facts.confirmedAt,
    token,
    amountCoins: facts.amountCoins,
    actualPaidAmount: facts.actualPaidAmount,
    serviceFeeAmount: facts.serviceFeeAmount,
    netIncomeAmount: facts.netIncomeAmount,
    fiat: { amountCents: facts.amountCents, currency: facts.currency, currencyRate: facts.currencyRate },
    txHash: facts.txHash,
    txHash2: facts.txHash2,
    provenNet,
  });
  const posted = outcome.entry ? await postEntry(tx, outcome.entry, { accounts: deps.accounts }) : null;
  return { posted, findings: outcome.findings };
}
