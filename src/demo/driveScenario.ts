import { createWalletClient, type Hex, http, publicActions } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { rawRpc } from '../devservices/anvil.ts';
import { formatDecimalAmount, parseDecimalAmount } from '../money/decimalAmount.ts';
import { createIntent } from '../payments/createIntent.ts';
import { cancelPayout } from '../payouts/cancelPayout.ts';
import { createPayout } from '../payouts/createPayout.ts';
import { sandboxTokenAbi, sandboxTokenBytecode } from '../sandbox/chain/contracts/sandboxTokenArtifact.ts';
import type { CreateCheckoutIntentInput } from '../svc/client.ts';
import { CheckoutStatus } from '../svc/models/checkoutStatus.ts';
import { Currency } from '../svc/models/currency.ts';
import { StableCoin } from '../svc/models/stableCoin.ts';
import type { DemoScenario, PlannedIntent, PlannedPayout } from './demoScenario.ts';
import { DEMO_FINALITY_DEPTH, DEMO_STORE, type DemoServices } from './demoServices.ts';
import { type SandboxControl, sandboxControl } from './sandboxControl.ts';
import { waitUntil } from './waitUntil.ts';

/** What the scenario became at the service: ids and amounts the summary reports against. */
export interface DrivenIntent {
  plan: PlannedIntent;
  intentId: string;
  /** amount_coins as the service set it (for fiat: converted at its rate). */
  requested: string;
  coin: 'USDT' | 'USDC';
}

export interface DrivenPayout {
  plan: PlannedPayout;
  payoutId: string;
  claimLinkId: string;
}

export interface DriveResult {
  intents: DrivenIntent[];
  payouts: DrivenPayout[];
  strangerTxHash: string;
  unacceptedTokenTxHash: string;
  /** The direct payment whose block the reorg replaced. */
  reorgedIntentId: string | null;
}

/** anvil's second dev account: deploys the token nobody accepts (the sandbox deploys with the first). */
const STRANGER_DEPLOYER_KEY: Hex = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';

const TERMINAL_AT_SERVICE = new Set<number>([
  CheckoutStatus.CONFIRMED,
  CheckoutStatus.UNDERPAID,
  CheckoutStatus.REJECTED,
  CheckoutStatus.MANUAL_OPERATION,
]);

/**
 * Carries a scenario out against the sandbox the way the world would: the merchant's systems
 * create intents (through stablebooks or directly at the service), buyers pay on chain, the
 * service misbehaves on cue (API faults while the daemon polls; webhook faults one payment at a
 * time, so each lands on the intended payment), claim links are funded, claimed and cancelled,
 * the chain reorganises once, a stranger and a look-alike token arrive. Time-driven outcomes
 * (timeouts, expiries, delayed webhooks) happen when runDemo advances the clock.
 */
export async function driveScenario(
  services: DemoServices,
  scenario: DemoScenario,
  miner: { pause(): Promise<void>; resume(): void },
  progress: (line: string) => void,
): Promise<DriveResult> {
  const control = sandboxControl(services.sandbox.url);
  const decimals = services.chain.decimals;

  progress(`creating ${scenario.intents.length} checkout intents`);
  const intents = await inBatches(scenario.intents, 6, (plan) => createPlanned(services, plan));

  // The service stumbles while the daemon polls and fetches intents: 40001s, then HTTP 500s.
  await control('/_sandbox/faults', {
    rate_limit_next: scenario.apiFaults.rateLimited,
    retry_after: '1s',
    error_next: { code: 90000, count: scenario.apiFaults.serverErrors },
  });

  const plain = intents.filter(
    (i) => i.plan.webhook === 'none' && i.plan.outcome !== 'timed_out' && !i.plan.reorged,
  );
  progress(`buyers pay ${plain.length} intents on chain`);
  await inBatches(plain, 4, (i) => pay(control, i, decimals));

  // Every injected fault served (to the daemon) before anything else signs a request.
  await waitUntil('the daemon meeting the injected 429s and 500s', async () => {
    const faults = await control<{ rateLimitNext: number; errorNext: unknown }>('/_sandbox/faults', {});
    return faults.rateLimitNext === 0 && faults.errorNext === null;
  });

  progress('webhook faults: dropped, duplicated, delayed and reordered deliveries');
  for (const fault of ['dropped', 'duplicated', 'delayed'] as const) {
    for (const i of intents.filter((x) => x.plan.webhook === fault)) {
      const webhooks =
        fault === 'dropped'
          ? { drop_next: 1 }
          : fault === 'duplicated'
            ? { duplicate: 1 }
            : { delay_ms: 2 * 3_600_000 };
      await control('/_sandbox/faults', { webhooks });
      await pay(control, i, decimals);
      if (fault === 'delayed') await control('/_sandbox/faults', { webhooks: { delay_ms: 0 } });
    }
  }
  const reordered = intents.filter((x) => x.plan.webhook === 'reordered');
  if (reordered.length > 0) {
    await control('/_sandbox/faults', { webhooks: { reorder: reordered.length } });
    for (const i of reordered) await pay(control, i, decimals);
  }

  const reorged = intents.find((i) => i.plan.reorged) ?? null;
  if (reorged) {
    progress('a reorg replaces the block of a proven payment (it lands again in a new block)');
    await pay(control, reorged, decimals);
    await waitForProof(services, reorged.intentId);
    const { tx_hash } = await control<{ tx_hash: string }>(`/_sandbox/intents/${reorged.intentId}`);
    await reorgAndReinclude(services, miner, tx_hash);
  }

  progress(`funding ${scenario.payouts.length} claim links`);
  const payouts = await inBatches(scenario.payouts, 3, async (plan) => {
    const { payout } = await createPayout(services.deps, {
      storeId: DEMO_STORE,
      amount: plan.amount,
      coin: plan.coin,
      chain: services.chain.chainId,
      referenceId: `${scenario.seed}-${plan.key}`,
    });
    if (payout.createOutcome !== 'created' || !payout.claimLinkId)
      throw new Error(`claim link ${plan.key} was not created: ${payout.lastError ?? payout.createOutcome}`);
    return { plan, payoutId: payout.id, claimLinkId: payout.claimLinkId };
  });
  await inBatches(payouts, 3, async (p) => {
    await waitUntil(`claim link ${p.plan.key} sent`, async () => {
      const link = await control<{ status: string }>(`/_sandbox/claim_links/${p.claimLinkId}`);
      return link.status === 'link_sent';
    });
    if (p.plan.outcome === 'claimed') await control(`/_sandbox/claim_links/${p.claimLinkId}/claim`, {});
    if (p.plan.outcome === 'cancelled') await cancelPayout(services.deps, p.payoutId);
  });

  progress('a stranger pays the merchant wallet; a look-alike token arrives');
  const strangerTxHash = await strangerTransfer(services, scenario);
  const unacceptedTokenTxHash = await unacceptedTokenTransfer(services, scenario);

  return {
    intents,
    payouts,
    strangerTxHash,
    unacceptedTokenTxHash,
    reorgedIntentId: reorged?.intentId ?? null,
  };
}

async function createPlanned(services: DemoServices, plan: PlannedIntent): Promise<DrivenIntent> {
  const request: CreateCheckoutIntentInput =
    plan.pricing.kind === 'coin'
      ? {
          stable_coin: StableCoin[plan.pricing.coin],
          amount_cents: plan.pricing.amountCents,
          order_id: plan.key,
        }
      : {
          currency: Currency[plan.pricing.currency],
          amount_cents: plan.pricing.amountCents,
          order_id: plan.key,
          // The first accepted coin settles a fiat-priced intent.
          accepted_stable_coins: [StableCoin[plan.pricing.coin]],
        };
  const created =
    plan.createdBy === 'stablebooks'
      ? (await createIntent(services.deps, DEMO_STORE, request)).created
      : await services.client.createCheckoutIntent(request);
  return {
    plan,
    intentId: created.allsvc_checkout_intent_id,
    requested: created.amount_coins,
    coin: created.stable_coin_type === StableCoin.USDT ? 'USDT' : 'USDC',
  };
}

/** The buyer pays as planned; resolves once the service has settled the payment (or held it). */
async function pay(control: SandboxControl, intent: DrivenIntent, decimals: number): Promise<void> {
  const { plan } = intent;
  const requested = parseDecimalAmount(intent.requested, decimals);
  const amount = (units: bigint) => formatDecimalAmount(units, decimals);
  const body: Record<string, unknown> = { route: plan.route, coin: intent.coin };
  switch (plan.outcome) {
    case 'underpaid_accepted':
      Object.assign(body, { amount: amount((requested * 9n) / 10n), accept_underpayment: true });
      break;
    case 'underpaid_returned':
      Object.assign(body, { amount: amount(requested / 2n), outcome: 'underpaid' });
      break;
    case 'overpaid':
      Object.assign(body, { amount: amount(requested + requested / 20n) });
      break;
    case 'kyt_rejected':
      Object.assign(body, { outcome: 'rejected' });
      break;
    case 'manual_review':
      Object.assign(body, { outcome: 'manual' });
      break;
    case 'fee_mismatch':
      // The service reports the gross as net, as if it had charged no fee.
      Object.assign(body, { reported_net_income: intent.requested });
      break;
    case 'exact':
    case 'timed_out':
      break;
  }
  await control(`/_sandbox/intents/${intent.intentId}/pay`, body);
  await waitUntil(`intent ${plan.key} settled at the service`, async () => {
    const view = await control<{ status: number }>(`/_sandbox/intents/${intent.intentId}`);
    return TERMINAL_AT_SERVICE.has(view.status);
  });
}

async function waitForProof(services: DemoServices, intentId: string): Promise<void> {
  await waitUntil(
    'the payment proven on chain',
    async () => {
      const { rows } = await services.database.pool.query(
        `select 1 from ledger_entries where ref_id = $1 and kind = 'chain.payment_proven'`,
        [intentId],
      );
      return rows.length > 0;
    },
    60_000,
  );
}

/**
 * Replaces every block from the one holding `txHash` to the head (anvil_reorg drops their
 * transactions), then sends each of those transactions again, as a real chain's mempool would, so
 * the sandbox's wallets keep their nonces and the payment lands again in a new block.
 */
async function reorgAndReinclude(
  services: DemoServices,
  miner: { pause(): Promise<void>; resume(): void },
  txHash: string,
): Promise<void> {
  const rpcUrl = services.chain.rpcUrl;
  await miner.pause();
  try {
    const head = BigInt(await rawRpc<string>(rpcUrl, 'eth_blockNumber', []));
    const receipt = await rawRpc<{ blockNumber: string }>(rpcUrl, 'eth_getTransactionReceipt', [txHash]);
    const depth = Number(head - BigInt(receipt.blockNumber) + 1n);
    const raws: string[] = [];
    for (let n = head - BigInt(depth) + 1n; n <= head; n++) {
      const block = await rawRpc<{ transactions: string[] }>(rpcUrl, 'eth_getBlockByNumber', [
        `0x${n.toString(16)}`,
        false,
      ]);
      for (const hash of block.transactions)
        raws.push(await rawRpc<string>(rpcUrl, 'eth_getRawTransactionByHash', [hash]));
    }
    await rawRpc(rpcUrl, 'anvil_reorg', [depth, []]);
    for (const raw of raws) await rawRpc(rpcUrl, 'eth_sendRawTransaction', [raw]);
    await rawRpc(rpcUrl, 'anvil_mine', [`0x${(DEMO_FINALITY_DEPTH + 1).toString(16)}`]);
  } finally {
    miner.resume();
  }
}

async function strangerTransfer(services: DemoServices, scenario: DemoScenario): Promise<string> {
  const { chain } = services;
  const { coin, amount } = scenario.strangerTransfer;
  const units = parseDecimalAmount(amount, chain.decimals);
  const stranger = await chain.wallet('stranger');
  await chain.mint(coin, stranger, units);
  const merchant = await chain.wallet(`merchant:${DEMO_STORE}`);
  const sent = await chain.transfer(coin, 'stranger', merchant, units);
  return sent.txHash.toLowerCase();
}

/** A token contract the registry does not list, calling itself "USDT", sends to the merchant wallet. */
async function unacceptedTokenTransfer(services: DemoServices, scenario: DemoScenario): Promise<string> {
  const { chain } = services;
  const account = privateKeyToAccount(STRANGER_DEPLOYER_KEY);
  const wallet = createWalletClient({
    account,
    chain: {
      id: chain.chainId,
      name: 'sandbox',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [chain.rpcUrl] } },
    },
    transport: http(chain.rpcUrl),
  }).extend(publicActions);
  const deploy = await wallet.deployContract({
    abi: sandboxTokenAbi,
    bytecode: sandboxTokenBytecode,
    args: ['Tether USD (look-alike)', 'USDT', chain.decimals],
  });
  const token = (await wallet.waitForTransactionReceipt({ hash: deploy })).contractAddress;
  if (!token) throw new Error('the look-alike token was not deployed');
  const units = parseDecimalAmount(scenario.unacceptedTokenTransfer.amount, chain.decimals);
  await wallet.waitForTransactionReceipt({
    hash: await wallet.writeContract({
      address: token,
      abi: sandboxTokenAbi,
      functionName: 'mint',
      args: [account.address, units],
    }),
  });
  const merchant = await chain.wallet(`merchant:${DEMO_STORE}`);
  const sent = await wallet.writeContract({
    address: token,
    abi: sandboxTokenAbi,
    functionName: 'transfer',
    args: [merchant, units],
  });
  await wallet.waitForTransactionReceipt({ hash: sent });
  return sent.toLowerCase();
}

/** Runs `work` over `items`, at most `width` at a time, results in the items' order. */
async function inBatches<T, R>(items: T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  });
  await Promise.all(lanes);
  return results;
}
