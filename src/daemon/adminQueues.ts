import { createHmac } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearer, matches } from '../http/bearer.ts';
import { viaHttps } from '../http/viaHttps.ts';

export const ADMIN_QUEUES_PATH = '/admin/queues';
const COOKIE = 'stablebooks_admin';
/** A dashboard session lasts one working day; then `?token=` (or the bearer header) again. */
export const ADMIN_SESSION_SECONDS = 8 * 3600;

/**
 * The queue dashboard (bull-board) at /admin/queues, on the daemon's operations port, behind
 * ADMIN_TOKEN. Without a token nothing is registered (the paths are 404). A request is let in by
 * `Authorization: Bearer <token>` or by the session cookie; `?token=<token>` on a GET sets that
 * cookie (HttpOnly, SameSite=Strict, scoped to the dashboard's path, ADMIN_SESSION_SECONDS long;
 * Secure when the browser came over https, directly or through a TLS-terminating proxy that says
 * so, or always with `cookieSecure: 'always'`) and redirects to the same URL without the token, so the UI's own asset and API requests carry
 * it and the token does not stay in the address bar. The cookie holds its expiry and an HMAC of
 * it keyed by the token, not the token; an expired or forged one is 401. Anything else is 401;
 * comparisons are constant time and nothing here logs a request.
 *
 * Read-only unless `write` (ADMIN_WRITE): retrying, removing or promoting a job by hand can post
 * or skip money, so the dashboard only looks unless the operator chose otherwise; any request
 * that is not a GET is 403 then, whatever the UI offers.
 */
export async function registerAdminQueues(
  app: FastifyInstance,
  deps: {
    token: string | undefined;
    write: boolean;
    queues: Queue[];
    /** ADMIN_COOKIE_SECURE: `auto` (the default) or `always`. */
    cookieSecure?: 'auto' | 'always';
    now?: () => number;
  },
): Promise<void> {
  const { token } = deps;
  if (!token) return;
  const now = deps.now ?? Date.now;
  const sign = (expires: number) =>
    createHmac('sha256', token).update(`stablebooks admin session ${expires}`).digest('base64url');
  const validSession = (value: string | undefined): boolean => {
    const dot = value?.indexOf('.') ?? -1;
    if (!value || dot < 1) return false;
    const expires = Number(value.slice(0, dot));
    return Number.isSafeInteger(expires) && expires > now() && matches(value.slice(dot + 1), sign(expires));
  };

  const board = new FastifyAdapter();
  board.setBasePath(ADMIN_QUEUES_PATH);
  createBullBoard({
    queues: deps.queues.map((q) => new BullMQAdapter(q, { readOnlyMode: !deps.write })),
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'stablebooks queues' } },
  });

  await app.register(
    async (admin) => {
      admin.addHook('onRequest', async (req, reply) => {
        if (matches(bearer(req), token) || validSession(cookie(req, COOKIE))) {
          if (deps.write || req.method === 'GET' || req.method === 'HEAD') return;
          return reply.code(403).send({
            ok: false,
            reason: 'the queue dashboard is read-only; set ADMIN_WRITE=true to change jobs from it',
          });
        }
        const url = new URL(req.url, 'http://admin.invalid');
        const query = url.searchParams.get('token');
        if (req.method === 'GET' && matches(query, token)) {
          url.searchParams.delete('token');
          // Not Secure over plain http (unless told `always`): the browser would drop the cookie
          // and the dashboard could not load its own API.
          const secure = deps.cookieSecure === 'always' || viaHttps(req) ? '; Secure' : '';
          const expires = now() + ADMIN_SESSION_SECONDS * 1000;
          return reply
            .header(
              'set-cookie',
              `${COOKIE}=${expires}.${sign(expires)}; Path=${ADMIN_QUEUES_PATH}; Max-Age=${ADMIN_SESSION_SECONDS}; HttpOnly; SameSite=Strict${secure}`,
            )
            .header('cache-control', 'no-store')
            .redirect(`${url.pathname}${url.search}`, 303);
        }
        return unauthorized(reply);
      });
      // The daemon keeps bodies as raw bytes; the dashboard's API (retry, clean, edit data) posts JSON.
      admin.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
        if (body === '') return done(null, undefined);
        try {
          done(null, JSON.parse(body as string));
        } catch {
          done(Object.assign(new Error('invalid JSON body'), { statusCode: 400 }), undefined);
        }
      });
      // Unknown paths under the prefix pass the token check first (no probing without the token).
      admin.setNotFoundHandler((_req, reply) => reply.code(404).send({ ok: false, reason: 'not found' }));
      await admin.register(board.registerPlugin());
    },
    { prefix: ADMIN_QUEUES_PATH },
  );
}

function unauthorized(reply: FastifyReply) {
  return reply
    .code(401)
    .header('www-authenticate', 'Bearer realm="stablebooks admin"')
    .send({ ok: false, reason: 'admin token required' });
}

function cookie(req: FastifyRequest, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
