import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const ADMIN_QUEUES_PATH = '/admin/queues';
const COOKIE = 'stablebooks_admin';

/**
 * The queue dashboard (bull-board) at /admin/queues, on the daemon's HTTP port, behind
 * ADMIN_TOKEN. Without a token nothing is registered (the paths are 404). A request is let in by
 * `Authorization: Bearer <token>` or by the session cookie; `?token=<token>` on a GET sets that
 * cookie (HttpOnly, SameSite=Strict, scoped to the dashboard's path) and redirects to the same URL
 * without the token, so the UI's own asset and API requests carry it and the token does not stay
 * in the address bar. The cookie holds an HMAC of the token, not the token. Anything else is 401;
 * comparisons are constant time and nothing here logs a request.
 */
export async function registerAdminQueues(
  app: FastifyInstance,
  deps: { token: string | undefined; queues: Queue[] },
): Promise<void> {
  const { token } = deps;
  if (!token) return;
  const session = createHmac('sha256', token).update('stablebooks admin session').digest('base64url');

  const board = new FastifyAdapter();
  board.setBasePath(ADMIN_QUEUES_PATH);
  createBullBoard({
    queues: deps.queues.map((q) => new BullMQAdapter(q)),
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'stablebooks queues' } },
  });

  await app.register(
    async (admin) => {
      admin.addHook('onRequest', async (req, reply) => {
        if (matches(bearer(req), token) || matches(cookie(req, COOKIE), session)) return;
        const url = new URL(req.url, 'http://admin.invalid');
        const query = url.searchParams.get('token');
        if (req.method === 'GET' && matches(query, token)) {
          url.searchParams.delete('token');
          const secure = req.protocol === 'https' ? '; Secure' : '';
          return reply
            .header(
              'set-cookie',
              `${COOKIE}=${session}; Path=${ADMIN_QUEUES_PATH}; HttpOnly; SameSite=Strict${secure}`,
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

function bearer(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization;
  const match = header?.match(/^Bearer\s+(.+)$/i);
  return match?.[1]?.trim();
}

function cookie(req: FastifyRequest, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Constant time in the secret's content and length: both sides are hashed to 32 bytes first. */
function matches(given: string | null | undefined, expected: string): boolean {
  if (!given) return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
