import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/logging/logger.ts';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { stream, text: () => lines.join('') };
}

const apiSecret = 'sk_live_9f8e7d6c5b4a39281706';
const encryptionKey = 'q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq8M=';
const adminToken = 'admin-token-0123456789abcdef';
const claimToken = 'clt_4d3c2b1a0f9e8d7c';
const claimUrl = `https://pay.example/claim/${claimToken}`;
const signature = 'v1=Zm9vYmFyYmF6cXV4cXV1eA==';

describe('logger redaction', () => {
  it('behavior: no secret reaches log output, whatever shape it is logged in', () => {
    const out = capture();
    const log = createLogger({
      level: 'trace',
      secrets: [apiSecret, encryptionKey, adminToken],
      destination: out.stream,
    });
    log.info({ store: { api_secret: apiSecret, apiKey: 'pk_public' } }, 'store loaded');
    log.info(
      { request: { headers: { 'x-signature': signature, 'X-Webhook-Signature': signature } } },
      'request',
    );
    log.info(
      { result: { payload: { token: claimToken, claim_url: claimUrl, claimUrl } } },
      'claim link created',
    );
    log.info({ deep: { a: { b: { c: { d: { apiSecret } } } } } }, 'deeply nested');
    log.warn({ note: `key was ${encryptionKey}` }, 'a secret under an innocent key');
    log.error({ err: new Error(`upstream echoed ${apiSecret} and ${adminToken}`) }, 'request failed');
    log.info(`message text with ${apiSecret}`);
    log.info({ config: { ENCRYPTION_KEY: encryptionKey, ADMIN_TOKEN: adminToken } }, 'config');
    const text = out.text();
    for (const secret of [apiSecret, encryptionKey, adminToken, claimToken, claimUrl, signature]) {
      expect(text).not.toContain(secret);
    }
    expect(text).not.toContain('Zm9vYmFy');
    // The logger still logs what is not secret.
    expect(text).toContain('pk_public');
    expect(text).toContain('claim link created');
    expect(text).toContain('[redacted]');
    expect(text.trim().split('\n')).toHaveLength(8);
  });
});
