import { createHash, createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type EphemeralAnvil, startAnvil } from '../../src/devservices/anvil.ts';
import { createSandboxChain } from '../../src/sandbox/chain/sandboxChain.ts';
import { runCli } from '../helpers/runCli.ts';
import {
  asRuntimeRole,
  createMigratedDatabase,
  createOwnedTestDatabase,
  createTestDatabase,
} from '../helpers/testDatabase.ts';

/**
 * `stablebooks doctor` against a service stand-in that checks request signatures with its own
 * code (node:crypto here, nothing from src/svc), and signs its responses the same way.
 */
const API_KEY = 'pk_doctor';
const SECRET = 'sk_doctor_0123456789abcdef';
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const hmac = (s: string) => `v1=${createHmac('sha256', SECRET).update(s).digest('base64')}`;

let server: Server;
let baseUrl: string;
const seen: Array<{ path: string; verified: boolean }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const url = new URL(req.url ?? '/', 'http://x');
      const h = (n: string) => String(req.headers[n] ?? '');
      const canonical = [
        req.method,
        url.pathname,
        url.search.slice(1),
        h('x-timestamp'),
        h('x-nonce'),
        sha(body),
      ].join('\n');
      const verified =
        h('x-api-key') === API_KEY &&
        h('x-signature') === hmac(canonical) &&
        Math.abs(Number(h('x-timestamp')) - Date.now() / 1000) <= 300;
      seen.push({ path: url.pathname, verified });
      const status = verified ? 200 : 401;
      const response = JSON.stringify(
        verified
          ? { code: 0, payload: { pong: 'ok' }, error: null, request_id: randomUUID() }
          : {
              code: 20002,
              payload: null,
              error: { message: 'Invalid signature', details: {} },
              request_id: randomUUID(),
            },
      );
      const ts = String(Math.floor(Date.now() / 1000));
      const nonce = randomUUID();
      const signature = hmac(
        [status, url.pathname, h('x-nonce'), sha(body), ts, nonce, sha(response)].join('\n'),
      );
      res.writeHead(status, {
        'content-type': 'application/json',
        'x-response-timestamp': ts,
        'x-response-nonce': nonce,
        'x-response-signature': signature,
        'x-request-id': 'req-1',
      });
      res.end(response);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function doctorEnv(overrides: Record<string, string> = {}): Promise<Record<string, string>> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-doctor-'));
  const storesFile = join(dir, 'stores.json');
  writeFileSync(
    storesFile,
    JSON.stringify([
      {
        store_id: 'st_doc',
        business_id: 'biz_doc',
        api_key: API_KEY,
        api_secret_env: 'DOC_SECRET',
        signed_response: true,
        wallets: { '31337': { merchant: `0x${'1'.repeat(40)}`, custody: `0x${'2'.repeat(40)}` } },
      },
    ]),
  );
  return {
    // The daemon's role, as in production: doctor warns about a superuser (see the role test).
    DATABASE_URL: asRuntimeRole(await createTestDatabase('doctor')),
    REDIS_URL: inject('redisUrl'),
    SVC_BASE_URL: baseUrl,
    STORES_FILE: storesFile,
    DOC_SECRET: SECRET,
    ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
    RPC_URL_31337: inject('rpcUrl'),
    ...overrides,
  };
}

describe('stablebooks doctor', () => {
  it('behavior: every check passes against real services and an independent signature checker', async () => {
    const run = await runCli(['doctor', '--json'], await doctorEnv());
    const result = JSON.parse(run.stdout) as {
      ok: boolean;
      checks: Array<{ name: string; ok: boolean; detail: string }>;
    };
    expect(result.checks.map((c) => [c.name, c.ok])).toEqual([
      ['config', true],
      ['postgres', true],
      ['redis', true],
      ['rpc 31337', true],
      ['store st_doc', true],
    ]);
    expect(result.ok).toBe(true);
    expect(run.code).toBe(0);
    expect(result.checks.at(-1)?.detail).toContain('response signature verified');
    expect(seen.at(-1)).toEqual({ path: '/v1/test/ping', verified: true });
    expect(run.stdout + run.stderr).not.toContain(SECRET);
  });

  it('error: a wrong secret, a wrong chain id and a dead Redis each fail their line, exit 1', async () => {
    const run = await runCli(
      ['doctor'],
      await doctorEnv({
        DOC_SECRET: 'sk_wrong_secret_000000',
        RPC_URL_31337: inject('rpcUrl'),
        RPC_URL_5: inject('rpcUrl'),
        REDIS_URL: 'redis://127.0.0.1:1',
      }),
    );
    expect(run.code).toBe(1);
    const lines = run.stdout.trim().split('\n');
    expect(lines.find((l) => l.includes('store st_doc'))).toMatch(
      /^FAIL .*signature check failed .*api_secret/,
    );
    expect(lines.find((l) => l.includes('rpc 5 '))).toMatch(
      /^FAIL .*answers chain id 31337, but RPC_URL_5 says 5/,
    );
    expect(lines.find((l) => l.includes('redis'))).toMatch(/^FAIL/);
    expect(lines.find((l) => l.includes('postgres'))).toMatch(/^ok/);
    expect(run.stdout).not.toContain('sk_wrong_secret_000000');
  });

  it("error: a registry token whose decimals are not its contract's decimals() fails its line", async () => {
    // An anvil of its own (the shared one is only read): the sandbox's USDT and USDC, 6 decimals.
    const anvil: EphemeralAnvil = await startAnvil({ chainId: 31338 });
    try {
      const chain = await createSandboxChain({ chainId: 31338, rpcUrl: anvil.rpcUrl, seed: 'doctor' });
      const usdt = chain.tokens.USDT.address.toLowerCase();
      const usdc = chain.tokens.USDC.address.toLowerCase();
      const noCode = `0x${'d'.repeat(40)}`;
      const chainsFile = (tokens: Record<string, { address: string; decimals: number }>) => {
        const path = join(mkdtempSync(join(tmpdir(), 'sb-doctor-chains-')), 'chains.json');
        writeFileSync(path, JSON.stringify([{ chain_id: 31338, name: 'doctor anvil', tokens }]));
        return path;
      };
      const doctor = async (file: string) => {
        const run = await runCli(
          ['doctor', '--json'],
          await doctorEnv({ CHAINS_FILE: file, RPC_URL_31338: anvil.rpcUrl }),
        );
        const result = JSON.parse(run.stdout) as {
          ok: boolean;
          checks: Array<{ name: string; ok: boolean; detail: string }>;
        };
        return {
          code: run.code,
          result,
          token: (name: string) => result.checks.find((c) => c.name === name),
        };
      };

      // CHAINS_FILE says 18 for a 6-decimal contract, and names a USDC contract that is not there.
      const wrong = await doctor(
        chainsFile({ USDT: { address: usdt, decimals: 18 }, USDC: { address: noCode, decimals: 6 } }),
      );
      expect(wrong.code).toBe(1);
      expect(wrong.result.ok).toBe(false);
      expect(wrong.token('token 31338 USDT')).toEqual({
        name: 'token 31338 USDT',
        ok: false,
        detail: `chain 31338 USDT ${usdt}: the registry says 18 decimals, decimals() on chain says 6; fix the token's decimals in CHAINS_FILE`,
      });
      expect(wrong.token('token 31338 USDC')).toMatchObject({ ok: false });
      expect(wrong.token('token 31338 USDC')?.detail).toMatch(
        new RegExp(`^chain 31338 USDC ${noCode}: decimals\\(\\) could not be read: `),
      );
      // The other checks are as before.
      expect(wrong.result.checks.filter((c) => !c.name.startsWith('token')).every((c) => c.ok)).toBe(true);

      // The registry agrees with the chain: both lines pass.
      const right = await doctor(
        chainsFile({ USDT: { address: usdt, decimals: 6 }, USDC: { address: usdc, decimals: 6 } }),
      );
      expect(right.result.checks.filter((c) => c.name.startsWith('token'))).toEqual([
        { name: 'token 31338 USDT', ok: true, detail: `${usdt}: decimals() 6, as the registry says` },
        { name: 'token 31338 USDC', ok: true, detail: `${usdc}: decimals() 6, as the registry says` },
      ]);
      expect(right.code).toBe(0);
    } finally {
      await anvil.stop();
    }
  });

  it('error: bad configuration is one line per problem, and the checks it does not touch still run', async () => {
    const run = await runCli(['doctor'], { ...(await doctorEnv()), ENCRYPTION_KEY: 'nope', DOC_SECRET: '' });
    expect(run.code).toBe(1);
    expect(run.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^FAIL\s+config\s+ENCRYPTION_KEY: must be 32 bytes/),
      expect.stringMatching(
        /^FAIL\s+config\s+STORES_FILE: store st_doc names api_secret_env DOC_SECRET, which is not set/,
      ),
      expect.stringMatching(/^ok\s+postgres\s+reachable/),
      expect.stringMatching(/^ok\s+redis\s+reachable/),
      expect.stringMatching(/^ok\s+rpc 31337\s+chain id 31337/),
    ]);
  });

  it('error: a variable that is not a URL fails its config line and the check needing it; the rest run', async () => {
    // It used to end the whole run with one bare line, "stablebooks: Invalid URL".
    const cases = [
      ['DATABASE_URL', 'postgres', 'must be a postgres:// URL'],
      ['REDIS_URL', 'redis', 'must be a redis:// or rediss:// URL'],
      ['SVC_BASE_URL', 'store st_doc', 'must be an http(s) URL'],
    ] as const;
    for (const [variable, needsIt, mustBe] of cases) {
      const run = await runCli(['doctor', '--json'], await doctorEnv({ [variable]: 'nonsense-value' }));
      expect(run.code).toBe(1);
      expect(run.stderr).toBe('');
      expect(run.stdout).not.toContain('nonsense-value');
      const result = JSON.parse(run.stdout) as {
        ok: boolean;
        checks: Array<{ name: string; ok: boolean; detail: string }>;
      };
      expect(result.ok).toBe(false);
      expect(result.checks.map((c) => [c.name, c.ok])).toEqual(
        ['config', 'postgres', 'redis', 'rpc 31337', 'store st_doc'].map((name) => [
          name,
          name !== 'config' && name !== needsIt,
        ]),
      );
      expect(result.checks[0]?.detail).toBe(`${variable}: ${mustBe} (got something that is not a URL)`);
      expect(result.checks.find((c) => c.name === needsIt)?.detail).toBe(
        `not checked: ${variable} is not usable (see config)`,
      );
    }
  });
});

describe("stablebooks doctor on the daemon's database role", () => {
  const postgresLine = async (databaseUrl: string) => {
    const run = await runCli(['doctor'], await doctorEnv({ DATABASE_URL: databaseUrl }));
    return { code: run.code, line: run.stdout.split('\n').find((l) => /^\S+\s+postgres\s/.test(l)) };
  };

  it('behavior: warns (exit 0) when the role is a superuser or owns the ledger tables, not when it is the runtime role', async () => {
    const superuser = await postgresLine(await createTestDatabase('doctor_superuser'));
    expect(superuser.line).toMatch(
      /^WARN\s+postgres\s+reachable, PostgreSQL [^;]+; role postgres is a superuser: the daemon could rewrite the books' past; give the daemon a role of its own \(stablebooks migrate's RUNTIME_ROLE, README "Two database roles"\)$/,
    );
    expect(superuser.code).toBe(0);

    // A plain role that migrated the schema: it owns the ledger.
    const ownerUrl = await createOwnedTestDatabase('doctor_owner');
    await runCli(['migrate'], { DATABASE_URL: ownerUrl });
    const owner = await postgresLine(ownerUrl);
    expect(owner.line).toMatch(
      /^WARN\s+postgres\s+reachable, PostgreSQL [^;]+; role stablebooks_test_owner owns ledger_accounts, ledger_balance_checkpoints, ledger_entries and \d+ more: the daemon could switch the ledger's triggers off/,
    );

    const runtime = await postgresLine((await createMigratedDatabase('doctor_runtime')).url);
    expect(runtime.line).toMatch(/^ok\s+postgres\s+reachable, PostgreSQL [^;]+$/);
  });
});
