import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { addSecretValue, createLogger, redactClaimLinks } from '../../../src/logging/logger.ts';
import { describeError } from '../../../src/payouts/describeError.ts';

const token = 'q1w2e3r4t5y6u7i8o9p0a1s2d3f4g5h6j7k8l9z0x1c';
const url = `http://127.0.0.1:8090/claim/${token}`;

describe('claim-link redaction', () => {
  it('behavior: a claim URL is scrubbed by shape from every line, with or without known secrets', () => {
    for (const secrets of [[], ['sk_some_api_secret_value']]) {
      const lines: string[] = [];
      const log = createLogger({
        level: 'info',
        secrets,
        destination: new Writable({
          write(chunk, _e, done) {
            lines.push(chunk.toString());
            done();
          },
        }),
      });
      log.info({ note: `send ${url} to the recipient`, url, claimLinkUrl: url, claim_token: token }, 'made');
      log.info(`message with ${url}`);
      const text = lines.join('');
      expect(text).not.toContain(token);
      expect(text).toContain('/claim/[redacted]');
      expect(text).toContain('made');
    }
  });

  it('behavior: error text kept in the database is scrubbed too; short paths are left alone', () => {
    expect(redactClaimLinks(`got ${url}`)).toBe('got http://127.0.0.1:8090/claim/[redacted]');
    expect(redactClaimLinks('POST /webhooks/claim-links')).toBe('POST /webhooks/claim-links');
    expect(describeError(new Error(`upstream said ${url}\nsecond line`))).toBe(
      'upstream said http://127.0.0.1:8090/claim/[redacted]',
    );
  });
});

describe('secret values learnt at run time', () => {
  it('behavior: after addSecretValue a bare token is scrubbed from messages and stored error text', () => {
    const secret = `tok_${Date.now().toString(36)}_abcdefghijkl`;
    const lines: string[] = [];
    const log = createLogger({
      level: 'info',
      destination: new Writable({
        write(chunk, _e, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    });
    log.info(`before ${secret}`);
    addSecretValue(secret);
    addSecretValue('short');
    log.info(`after ${secret}`);
    log.info({ innocent: secret }, JSON.stringify({ t: secret }));
    expect(lines[0]).toContain(secret);
    expect(lines.slice(1).join('')).not.toContain(secret);
    expect(redactClaimLinks(`x ${secret} y short`)).toBe('x [redacted] y short');
  });
});
