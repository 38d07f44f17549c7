import type { FastifyRequest } from 'fastify';

/**
 * Whether the browser reached us over https: the request itself, or a proxy in front that
 * terminated TLS and says so in `X-Forwarded-Proto` or `Forwarded: proto=`. The headers are taken
 * from anyone, without a list of trusted proxies, because the only thing decided here is to add
 * `Secure` to a cookie: a client that forges them over plain http only makes its own browser drop
 * the cookie. Any hop saying https counts, for the same reason.
 */
export function viaHttps(req: Pick<FastifyRequest, 'protocol' | 'headers'>): boolean {
  if (req.protocol === 'https') return true;
  const forwardedProto = [req.headers['x-forwarded-proto'] ?? []].flat().join(',');
  if (forwardedProto.split(',').some((p) => p.trim().toLowerCase() === 'https')) return true;
  const forwarded = [req.headers.forwarded ?? []].flat().join(',');
  return /(?:^|[;,\s])proto="?https"?(?=$|[;,\s])/i.test(forwarded);
}
