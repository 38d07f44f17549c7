/**
 * Response envelope: every service response is {code, payload, error, request_id}. A client parses
 * with the loose schema first, so a failure is read from `code` and `error` whatever the payload
 * looks like, then parses a success with envelopeSchema(payloadSchema) for that endpoint.
 */
import { z } from 'zod';

export const envelopeErrorSchema = z.object({
  message: z.string(),
  // The details object depends on the code; errorDetails.ts reads the ones we act on.
  details: z
    .record(z.string(), z.unknown())
    .nullish()
    .transform((d) => d ?? {}),
});
export type EnvelopeError = z.output<typeof envelopeErrorSchema>;

/**
 * Any response. Tolerant on purpose: a missing request_id or odd details must not hide the error
 * code, which is what decides retry or give up.
 */
export const anyEnvelopeSchema = z.looseObject({
  code: z.int(),
  payload: z
    .unknown()
    .optional()
    .transform((p) => p ?? null),
  error: envelopeErrorSchema.nullish().transform((e) => e ?? null),
  request_id: z
    .string()
    .nullish()
    .transform((r) => r ?? null),
});
export type AnyEnvelope = z.output<typeof anyEnvelopeSchema>;

/** A successful response carrying `payload`. */
export function envelopeSchema<P extends z.ZodType>(payload: P) {
  return z.object({
    code: z.literal(0),
    payload,
    error: z.null(),
    request_id: z.string(),
  });
}
export type Envelope<P extends z.ZodType> = z.output<ReturnType<typeof envelopeSchema<P>>>;
