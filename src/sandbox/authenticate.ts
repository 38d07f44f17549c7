import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../clock.ts';
import type { NonceStore } from '../svc/signing/nonceStore.ts';
import { readHeader, verifyRequestSignature } from '../svc/signing/requestSignature.ts';
import { rawBody } from './envelope.ts';
import type { SandboxConfig, SandboxStore } from './sandboxConfig.ts';

export interface StoreIdentity {
  businessId: string;
  store: SandboxStore;
}

export type AuthResult =
  | { ok: true; identity: StoreIdentity }
  | {
      ok: false;
      httpStatus: number;
      code: number;
      message: string;
      details: Record<string, unknown>;
      store?: SandboxStore;
    };

/**
 * The spec's verification rules, in order: signing headers present (20001), known key and valid
 * signature, timestamp within 5 minutes and an unused nonce (20002 with details.reason), then the
 * store's IP allowlist (30001). Every failure names the store once X-API-Key is one of its keys,
 * 20001 included, so that a store with signed_response gets all its answers signed.
 */
export async function authenticate(
  req: FastifyRequest,
  world: { config: SandboxConfig; clock: Clock; nonces: NonceStore },
): Promise<AuthResult> {
  const identity = storeOfApiKey(req, world.config);
  for (const name of ['X-API-Key', 'X-Timestamp', 'X-Nonce', 'X-Signature']) {
    if (!readHeader(req.headers, name)) {
      return {
        ok: false,
        httpStatus: 401,
        code: 20001,
        message: 'Missing authentication headers',
        details: { header: name },
        store: identity?.store,
      };
    }
  }
  if (!identity) {
    return {
      ok: false,
      httpStatus: 401,
      code: 20002,
      message: 'Invalid signature',
      details: { reason: 'unknown_api_key' },
    };
  }
  const url = new URL(req.url, 'http://sandbox');
  const verdict = await verifyRequestSignature({
    secret: identity.store.api_secret,
    method: req.method,
    path: url.pathname,
    query: url.search.replace(/^\?/, ''),
    rawBody: rawBody(req),
    headers: req.headers,
    clock: world.clock,
    nonceStore: world.nonces,
  });
  if (!verdict.ok) {
    const reason = verdict.reason === 'bad_signature' ? 'signature_mismatch' : verdict.reason;
    return {
      ok: false,
      httpStatus: 401,
      code: 20002,
      message: 'Invalid signature',
      details: { reason },
      store: identity.store,
    };
  }
  if (!ipAllowed(identity.store.ip_allowlist, req.ip)) {
    return {
      ok: false,
      httpStatus: 403,
      code: 30001,
      message: 'Forbidden',
      details: { reason: 'ip_not_allowed' },
      store: identity.store,
    };
  }
  return { ok: true, identity };
}

/** The store whose key the request's X-API-Key is, if any; it says nothing of the signature. */
function storeOfApiKey(req: FastifyRequest, config: SandboxConfig): StoreIdentity | undefined {
  const apiKey = readHeader(req.headers, 'X-API-Key');
  return apiKey ? findStore(config, apiKey) : undefined;
}

function findStore(config: SandboxConfig, apiKey: string): StoreIdentity | undefined {
  for (const business of config.businesses) {
    const store = business.stores.find((s) => s.api_key === apiKey);
    if (store) return { businessId: business.business_id, store };
  }
  return undefined;
}

/** An empty allowlist allows every address, as the spec says. */
export function ipAllowed(allowlist: readonly string[], ip: string): boolean {
  if (allowlist.length === 0) return true;
  const list = new BlockList();
  for (const entry of allowlist) {
    const [net, bits] = entry.split('/');
    if (net && bits) list.addSubnet(net, Number(bits), isIPv6(net) ? 'ipv6' : 'ipv4');
  }
  const plain = ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
  return list.check(plain, isIPv6(plain) ? 'ipv6' : 'ipv4');
}
