import { describe, expect, it } from 'vitest';
import { SVC_ERROR_CODES, SvcErrorCode, svcErrorCodeInfo } from '../../../../src/svc/models/errorCodes.ts';

describe('error codes', () => {
  it('behavior: every code of the spec, with its HTTP status where given', () => {
    const table = Object.values(SVC_ERROR_CODES).map((e) => [e.code, e.httpStatus]);
    expect(table).toEqual([
      [0, 200],
      [10001, 400],
      [20001, 401],
      [20002, 401],
      [30001, 403],
      [30002, 403],
      [40001, 429],
      [50001, null],
      [50002, null],
      [50103, null],
      [50104, 403],
      [50106, 409],
      [50107, 404],
      [50108, 409],
      [90000, 500],
      [99999, 500],
    ]);
  });

  it('behavior: names agree with SvcErrorCode', () => {
    for (const [name, code] of Object.entries(SvcErrorCode)) {
      expect(svcErrorCodeInfo(code)).toMatchObject({ code, name });
    }
  });

  it('behavior: unknown code is undefined, not a crash', () => {
    expect(svcErrorCodeInfo(50105)).toBeUndefined();
    expect(svcErrorCodeInfo(-1)).toBeUndefined();
    expect(svcErrorCodeInfo(50108)?.meaning).toMatch(/not cancellable/);
  });
});
