import { describe, expect, it } from 'vitest';
import { MissingBinaryError } from '../../../src/devservices/findBinary.ts';
import { prometheusBinary } from '../../../src/devservices/prometheus.ts';

describe('prometheusBinary', () => {
  it('error: a missing binary says to run scripts/ensure-deps.sh', () => {
    const missing = () => prometheusBinary({ PATH: '/nonexistent' }, '/nonexistent-either');
    expect(missing).toThrow(MissingBinaryError);
    expect(missing).toThrow(/^prometheus not found: run {2}bash scripts\/ensure-deps\.sh/);
  });
});
