import { describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import { createDomainContext, UnknownStoreError } from '../../../src/context/domainContext.ts';
import { coerceError } from '../../../src/errors/coerceError.ts';
import { isRetryable } from '../../../src/errors/stablebooksError.ts';
import { PayoutCreateError } from '../../../src/payouts/errors.ts';
import { SvcApiError } from '../../../src/svc/errors.ts';

describe('coerceError', () => {
  it('behavior: an Error is kept as it is', () => {
    const err = new TypeError('bad');
    expect(coerceError(err)).toBe(err);
  });

  it('behavior: a thrown string, number, null or object becomes an Error with a readable message', () => {
    expect(coerceError('timeout').message).toBe('timeout');
    expect(coerceError(42).message).toBe('42');
    expect(coerceError(null).message).toBe('null');
    expect(coerceError({ message: 'from a plain object' }).message).toBe('from a plain object');
  });
});

describe('isRetryable', () => {
  it('behavior: our errors say whether a retry can help; anything else is retried', () => {
    const refused = new SvcApiError({
      endpoint: 'checkout_intents.get',
      code: 10001,
      httpStatus: 400,
      message: 'Validation error',
      details: {},
      requestId: undefined,
      retryable: false,
      action: 'fix the request',
    });
    expect(isRetryable(refused)).toBe(false);
    expect(refused.action).toBe('fix the request');
    expect(isRetryable(new PayoutCreateError('unknown', 'p1', 'r1', 3, 'timeout'))).toBe(true);
    expect(isRetryable(new PayoutCreateError('failed', 'p1', 'r1', 1, 'refused'))).toBe(false);
    expect(isRetryable(new Error('connection reset'))).toBe(true);
    expect(isRetryable('a string')).toBe(true);
  });

  it('error: a store STORES_FILE does not name is UnknownStoreError, not retryable', () => {
    const ctx = createDomainContext(
      {
        stores: [],
        chains: createChainRegistry([]),
        svcBaseUrl: 'http://127.0.0.1:1',
        encryptionKey: Buffer.alloc(32),
      },
      { db: {} as never, clock: { now: () => new Date() }, logger: {} as never },
    );
    const thrown = (() => {
      try {
        ctx.client('st_nope');
      } catch (err) {
        return err;
      }
    })();
    expect(thrown).toBeInstanceOf(UnknownStoreError);
    expect(isRetryable(thrown)).toBe(false);
    expect((thrown as Error).message).toBe('store st_nope is not in STORES_FILE');
  });
});
