import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { anyEnvelopeSchema, envelopeSchema } from '../../../../src/svc/models/envelope.ts';

const pingOk = { code: 0, payload: { pong: 'ok' }, error: null, request_id: 'req_01HZX3K6V1' };
const testFail = {
  code: 10001,
  payload: null,
  error: { message: 'Validation error', details: {} },
  request_id: 'req_01HZX3K6V2',
};

describe('anyEnvelopeSchema', () => {
  it('behavior: success and failure both parse', () => {
    expect(anyEnvelopeSchema.parse(pingOk)).toEqual(pingOk);
    expect(anyEnvelopeSchema.parse(testFail)).toEqual(testFail);
  });

  it('behavior: a bare integer payload', () => {
    expect(anyEnvelopeSchema.parse({ code: 0, payload: 20, error: null, request_id: 'r' }).payload).toBe(20);
  });

  it('behavior: tolerant of missing pieces around the code', () => {
    const parsed = anyEnvelopeSchema.parse({ code: 90000, error: { message: 'Internal error' }, extra: 1 });
    expect(parsed).toMatchObject({
      code: 90000,
      payload: null,
      error: { message: 'Internal error', details: {} },
      request_id: null,
    });
  });

  it.each([
    { payload: null, error: null, request_id: 'r' },
    { code: '0', payload: null, error: null, request_id: 'r' },
    { code: 1.5, payload: null, error: null, request_id: 'r' },
    { code: 10001, payload: null, error: { details: {} }, request_id: 'r' },
    '<html>Bad Gateway</html>',
    null,
  ])('error: not an envelope %j', (v) => {
    expect(anyEnvelopeSchema.safeParse(v).success).toBe(false);
  });
});

describe('envelopeSchema', () => {
  const pingEnvelope = envelopeSchema(z.object({ pong: z.literal('ok') }));

  it('behavior: success with its payload', () => {
    expect(pingEnvelope.parse(pingOk).payload.pong).toBe('ok');
  });

  it('error: a failure is not a success', () => {
    expect(pingEnvelope.safeParse(testFail).success).toBe(false);
    expect(pingEnvelope.safeParse({ ...pingOk, code: 10001 }).success).toBe(false);
    expect(pingEnvelope.safeParse({ ...pingOk, error: { message: 'x', details: {} } }).success).toBe(false);
  });

  it('error: success requires request_id', () => {
    const { request_id: _, ...withoutId } = pingOk;
    expect(pingEnvelope.safeParse(withoutId).success).toBe(false);
  });
});
