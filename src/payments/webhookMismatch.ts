import type { DbExecutor } from '../db/database.ts';
import type { FindingDraft } from '../findings/finding.ts';
import { resolveFinding } from '../findings/recordFinding.ts';
import { sameDecimalAmount } from '../money/decimalAmount.ts';
import type { CheckoutIntent } from '../svc/models/checkoutIntent.ts';
import {
  CheckoutStatus,
  checkoutStatusSchema,
  isTerminalCheckoutStatus,
} from '../svc/models/checkoutStatus.ts';
import type { CheckoutWebhookPayload } from '../svc/models/checkoutWebhook.ts';

export const WEBHOOK_MISMATCH = 'webhook_api_mismatch';

/** What compareWebhook records: per field, the webhook's value and the API's. */
export interface WebhookMismatchDetails {
  differences?: Record<string, { webhook: unknown; api: unknown }>;
}

/**
 * The webhook_api_mismatch findings of one observation, for the caller to record; an open one
 * (`openMismatch`, its details) that the facts now agree with is resolved here.
 */
export async function checkWebhookMismatch(
  tx: DbExecutor,
  webhook: CheckoutWebhookPayload | undefined,
  facts: CheckoutIntent,
  openMismatch: WebhookMismatchDetails | null | undefined,
): Promise<FindingDraft[]> {
  // Against the facts we hold: an API read that only lacks the amounts does not disagree with them.
  const findings: FindingDraft[] = webhook ? compareWebhook(webhook, facts) : [];
  // A webhook that disagreed with a read that was only behind (ON_CHAIN, or no amounts yet): once
  // a later read says what the webhook said, there is nothing left to look at.
  if (
    openMismatch &&
    !findings.some((f) => f.kind === WEBHOOK_MISMATCH) &&
    webhookNowAgrees(openMismatch, facts)
  ) {
    await resolveFinding(tx, WEBHOOK_MISMATCH, {
      type: 'checkout_intent',
      id: facts.all_svc_checkout_intent_id,
    });
  }
  return findings;
}

/**
 * The fields a webhook and an API read of its intent are compared on: the webhook's value, the
 * read's, and whether the read says what the webhook said (amounts as numbers, hex addresses and
 * hashes in any case, and of a terminal status only paid or not: any status but 20 is not paid;
 * a status on the way agrees with any later one). A
 * webhook value of null says nothing for actual_paid_amount and status (not recorded, or from
 * before the field existed). `agrees` also takes a webhook value back from a finding's JSON.
 */
const WEBHOOK_FIELDS: Record<
  string,
  {
    webhook: (w: CheckoutWebhookPayload) => unknown;
    api: (i: CheckoutIntent) => unknown;
    agrees: (webhook: unknown, i: CheckoutIntent) => boolean;
    optional?: boolean;
  }
> = {
  amount_coins: {
    webhook: (w) => w.amount_coins,
    api: (i) => i.amount_coins,
    agrees: (v, i) => sameDecimalAmount(textOf(v), i.amount_coins),
  },
  actual_paid_amount: {
    webhook: (w) => w.actual_paid_amount,
    api: (i) => i.actual_paid_amount,
    agrees: (v, i) => sameDecimalAmount(textOf(v), i.actual_paid_amount),
    optional: true,
  },
  chain_id: { webhook: (w) => w.chain_id, api: (i) => i.chain_id, agrees: (v, i) => v === i.chain_id },
  coin_contract: {
    webhook: (w) => w.coin_contract_address,
    api: (i) => i.coin_contract,
    agrees: (v, i) => sameText(v, i.coin_contract),
  },
  tx_hash: { webhook: (w) => w.tx_hash, api: (i) => i.tx_hash, agrees: (v, i) => sameText(v, i.tx_hash) },
  status: {
    webhook: (w) => w.status,
    api: (i) => i.status,
    // A webhook of a status on the way (ON_CHAIN, MANUAL_OPERATION, ...) was sent before the
    // intent moved on: the API being further along is progress, not a disagreement.
    agrees: (v, i) =>
      !isTerminalWebhookStatus(v) ||
      (v === CheckoutStatus.CONFIRMED) === (i.status === CheckoutStatus.CONFIRMED),
    optional: true,
  },
};

const isTerminalWebhookStatus = (v: unknown) =>
  checkoutStatusSchema.safeParse(v).success && isTerminalCheckoutStatus(v as CheckoutStatus);
const textOf = (v: unknown) => (v === null || v === undefined ? null : String(v));
const sameText = (a: unknown, b: unknown) => String(a ?? '').toLowerCase() === String(b ?? '').toLowerCase();

/** A webhook that disagrees with the API is a finding for a person, never a crash. */
function compareWebhook(webhook: CheckoutWebhookPayload, intent: CheckoutIntent): FindingDraft[] {
  const differences: Record<string, { webhook: unknown; api: unknown }> = {};
  for (const [field, f] of Object.entries(WEBHOOK_FIELDS)) {
    const value = f.webhook(webhook);
    if (f.optional && value === null) continue;
    if (!f.agrees(value, intent)) differences[field] = { webhook: value, api: f.api(intent) };
  }
  if (Object.keys(differences).length === 0) return [];
  return [
    {
      kind: WEBHOOK_MISMATCH,
      severity: 'warning',
      ref: { type: 'checkout_intent', id: intent.all_svc_checkout_intent_id },
      details: { webhook_id: webhook.webhook_id, differences },
    },
  ];
}

/** Whether every field a webhook_api_mismatch recorded now reads as the webhook said. */
function webhookNowAgrees(details: WebhookMismatchDetails, intent: CheckoutIntent): boolean {
  return Object.entries(details.differences ?? {}).every(
    ([field, { webhook }]) => WEBHOOK_FIELDS[field]?.agrees(webhook, intent) ?? false,
  );
}
