import { describe, expect, it } from 'vitest';
import { ipAllowed } from '../../../src/sandbox/authenticate.ts';

describe('IP allowlist (CIDR, IPv4 and IPv6)', () => {
  it.each([
    [[], '203.0.113.9', true],
    [['10.0.0.0/8'], '10.200.1.1', true],
    [['10.0.0.0/8'], '11.0.0.1', false],
    [['10.0.0.0/8'], '::ffff:10.1.2.3', true],
    [['192.168.1.0/24', '2001:db8::/32'], '2001:db8:abcd::1', true],
    [['2001:db8::/32'], '2001:db9::1', false],
    [['2001:db8::/32'], '127.0.0.1', false],
    [['::1/128'], '::1', true],
  ])('behavior: allowlist %j and %s -> %s', (list, ip, expected) => {
    expect(ipAllowed(list as string[], ip as string)).toBe(expected);
  });
});
