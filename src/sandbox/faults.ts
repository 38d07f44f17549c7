import { z } from 'zod';

/**
 * Faults a test or the demo injects through POST /_sandbox/faults: the next API requests answer
 * 40001 or an error code, the next confirmed intents read come without their amounts, and the next webhooks are duplicated, delayed, reordered or dropped.
 */
export const faultsRequestSchema = z
  .object({
    /** The next N signed API requests answer 40001 with details.retry_after. */
    rate_limit_next: z.int().min(0).optional(),
    /** retry_after sent with injected 40001s (default "1s"). */
    retry_after: z.string().optional(),
    /** The next `count` signed API requests answer this error code (90000 and 99999 with HTTP 500). */
    error_next: z.object({ code: z.int(), count: z.int().min(1) }).optional(),
    /**
     * The next N reads of a full CONFIRMED intent answer actual_paid_amount, service_fee_amount
     * and net_income_amount as null (the spec types them nullable): a confirmation whose figures
     * come later.
     */
    withhold_amounts_next: z.int().min(0).optional(),
    webhooks: z
      .object({
        /** Deliver each of the next N webhooks twice (the second with a fresh nonce). */
        duplicate: z.int().min(0).optional(),
        /** Hold the next webhooks this long (sandbox clock) before the first attempt. */
        delay_ms: z.int().min(0).optional(),
        /** Hold the next N webhooks, then deliver them newest first. */
        reorder: z.int().min(0).optional(),
        /** Never deliver the next N webhooks (logged as dropped; redeliver through the control API). */
        drop_next: z.int().min(0).optional(),
      })
      .optional(),
  })
  .strict();
export type FaultsRequest = z.output<typeof faultsRequestSchema>;

export interface Faults {
  rateLimitNext: number;
  retryAfter: string;
  errorNext: { code: number; count: number } | null;
  withholdAmountsNext: number;
  webhookDuplicate: number;
  webhookDelayMs: number;
  webhookReorder: number;
  webhookDropNext: number;
}

export function createFaults(): Faults {
  return {
    rateLimitNext: 0,
    retryAfter: '1s',
    errorNext: null,
    withholdAmountsNext: 0,
    webhookDuplicate: 0,
    webhookDelayMs: 0,
    webhookReorder: 0,
    webhookDropNext: 0,
  };
}

export function applyFaults(faults: Faults, request: FaultsRequest): void {
  if (request.rate_limit_next !== undefined) faults.rateLimitNext = request.rate_limit_next;
  if (request.retry_after !== undefined) faults.retryAfter = request.retry_after;
  if (request.error_next !== undefined) faults.errorNext = { ...request.error_next };
  if (request.withhold_amounts_next !== undefined) faults.withholdAmountsNext = request.withhold_amounts_next;
  const w = request.webhooks;
  if (w?.duplicate !== undefined) faults.webhookDuplicate = w.duplicate;
  if (w?.delay_ms !== undefined) faults.webhookDelayMs = w.delay_ms;
  if (w?.reorder !== undefined) faults.webhookReorder = w.reorder;
  if (w?.drop_next !== undefined) faults.webhookDropNext = w.drop_next;
}
