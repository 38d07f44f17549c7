/**
 * An error the simulated service answers with: the envelope's code, message and details, and the
 * HTTP status of the spec's error table. Engines throw it; the server turns it into an envelope.
 */
export class SandboxApiError extends Error {
  override name = 'SandboxApiError';
  constructor(
    readonly httpStatus: number,
    readonly code: number,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * HTTP statuses of the codes. The spec leaves 50001 and 50002 open: 404 for "intent not found"
 * and 400 for "create checkout intent error" (docs/decisions.md).
 */
export const HTTP_STATUS_OF_CODE: Record<number, number> = {
  10001: 400,
  20001: 401,
  20002: 401,
  30001: 403,
  30002: 403,
  40001: 429,
  50001: 404,
  50002: 400,
  50103: 400,
  50104: 403,
  50106: 409,
  50107: 404,
  50108: 409,
  90000: 500,
  99999: 500,
};

export function apiError(
  code: number,
  message: string,
  details: Record<string, unknown> = {},
): SandboxApiError {
  return new SandboxApiError(HTTP_STATUS_OF_CODE[code] ?? 400, code, message, details);
}

export const validationError = (details: Record<string, unknown>) =>
  apiError(10001, 'Validation error', details);
