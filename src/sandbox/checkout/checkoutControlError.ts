/**
 * A refusal of the control API (/_sandbox/intents/...): plain JSON `{error}` with this HTTP
 * status, never the service envelope. 400 bad input, 404 unknown intent, 409 wrong state for the
 * action, 500 a chain failure during a payment.
 */
export class CheckoutControlError extends Error {
  override name = 'CheckoutControlError';
  constructor(
    readonly httpStatus: 400 | 404 | 409 | 500,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
