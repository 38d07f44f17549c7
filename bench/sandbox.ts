// Throughput of the sandbox's signed API: GET /v1/checkout_intents/{id}/status, signed by the
// project's client, many in flight, for BENCH_SECONDS (default 10). The daemon's benchmarks run
// against the sandbox, so it must not be their bottleneck. Run: npm run bench:sandbox
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createSvcClient } from '../src/svc/client.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);

const config = {
  rate_limit: { requests_per_second: 1_000_000, burst: 1_000_000 },
  businesses: [
    {
      business_id: 'biz_bench',
      stores: [{ store_id: 'st_bench', api_key: 'pk_bench', api_secret: 'sk_bench_0123456789abcdef' }],
    },
  ],
};
// The sandbox runs in its own process, as it does for the daemon's benchmarks, so the client's
// signing and the server's verification do not share one event loop.
const storesFile = join(mkdtempSync(join(tmpdir(), 'sb-bench-')), 'stores.json');
writeFileSync(storesFile, JSON.stringify(config));
console.log('starting the sandbox (anvil, tokens)...');
const bin = fileURLToPath(new URL('../bin/stablebooks.js', import.meta.url));
const child = spawn(process.execPath, [bin, 'sandbox', '--port', '0', '--stores', storesFile, '--json'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const ready = await new Promise<{ url: string }>((resolve, reject) => {
  let text = '';
  createInterface({ input: child.stdout! }).on('line', (line) => {
    text += line;
    try {
      resolve(JSON.parse(text) as { url: string });
    } catch {
      // the JSON document spans several lines; keep reading
    }
  });
  child.on('exit', (code) => reject(new Error(`sandbox exited with ${code}`)));
});
const sandbox = {
  url: ready.url,
  stop: () =>
    new Promise<void>((r) => {
      child.once('exit', () => r());
      child.kill('SIGTERM');
    }),
};
try {
  const client = createSvcClient({
    baseUrl: sandbox.url,
    credentials: { apiKey: 'pk_bench', apiSecret: 'sk_bench_0123456789abcdef', signedResponse: false },
    retry: { maxAttempts: 1 },
  });
  const intent = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 1000n });
  const id = intent.allsvc_checkout_intent_id;
  let done = 0;
  let failed = 0;
  const latencies: number[] = [];
  const end = Date.now() + seconds * 1000;
  const progress = setInterval(() => console.log(`  ${done} requests so far`), 2000);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const t = performance.now();
        try {
          await client.getCheckoutIntentStatus(id);
          done++;
        } catch {
          failed++;
        }
        latencies.push(performance.now() - t);
      }
    }),
  );
  clearInterval(progress);
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies[Math.floor((latencies.length - 1) * p)] ?? 0).toFixed(1);
  console.log(
    `\nmachine: ${cpus().length} x ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
  );
  console.log(
    `| signed GET status, ${concurrency} in flight, client and sandbox in two processes | ${(done / elapsed).toFixed(0)} req/s | p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms | ${failed} failed |`,
  );
} finally {
  await sandbox.stop();
}
