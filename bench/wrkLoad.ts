/**
 * Load over loopback with wrk (Debian package `wrk`), a C load generator like pgbench's own
 * client: the load generator's CPU is then a small share of the two cores the figures compare,
 * where a Node one (autocannon) took as much CPU per request as the intake's PostgreSQL.
 *
 * wrk cannot sign (no HMAC in its Lua), so the requests are prepared before the run: raw HTTP/1.1
 * requests, each its own, written to one file per wrk thread and sent in order by a Lua script.
 * A thread that runs out starts its file again (`wrapped` > 0): the repeats are duplicates, which
 * a receiver answers without storing, so a caller counting stored rows stays honest.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findBinary } from '../src/devservices/findBinary.ts';
import { runCommand } from './benchKit.ts';

export interface PreparedRequest {
  method: 'POST';
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface WrkRun {
  /** Responses received (any status). */
  requests: number;
  /** Responses other than 2xx/3xx. */
  non2xx: number;
  /** Socket errors and timeouts. */
  errors: number;
  seconds: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Times a thread started its file of requests again. */
  wrapped: number;
}

const LUA = String.raw`
local counter = 0
local threads = {}
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end
function init(args)
  local f = assert(io.open(args[1] .. "." .. id, "rb"))
  local data = f:read("*a")
  f:close()
  reqs = {}
  local pos = 1
  while true do
    local e = string.find(data, "\0", pos, true)
    if not e then break end
    reqs[#reqs + 1] = string.sub(data, pos, e - 1)
    pos = e + 1
  end
  n = #reqs
  i = 0
  wrapped = 0
end
function request()
  i = i + 1
  if i > n then
    i = 1
    wrapped = wrapped + 1
  end
  return reqs[i]
end
function done(summary, latency, requests)
  local w = 0
  for _, t in ipairs(threads) do w = w + (t:get("wrapped") or 0) end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"non2xx":%d,"errors":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"wrapped":%d}\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, w))
end
`;

/** Writes `count` requests made by `make` into one file per thread; returns the files' prefix. */
export function prepareRequests(
  dir: string,
  tag: string,
  threads: number,
  count: number,
  host: string,
  make: (n: number) => PreparedRequest,
): string {
  const prefix = join(dir, `wrk-${tag}`);
  const perThread: string[][] = Array.from({ length: threads }, () => []);
  for (let n = 0; n < count; n++) {
    const r = make(n);
    let head = `${r.method} ${r.path} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${Buffer.byteLength(r.body)}\r\n`;
    for (const [name, value] of Object.entries(r.headers)) head += `${name}: ${value}\r\n`;
    perThread[n % threads]!.push(`${head}\r\n${r.body}\0`);
  }
  perThread.forEach((lines, t) => {
    writeFileSync(`${prefix}.${t}`, lines.join(''));
  });
  return prefix;
}

/** Runs wrk against `url` with the prepared requests; figures in milliseconds and seconds. */
export async function runWrk(args: {
  url: string;
  dir: string;
  prefix: string;
  threads: number;
  connections: number;
  seconds: number;
  /** Called with wrk's pid once it runs (to count its CPU). */
  onStart?: (pid: number) => void;
}): Promise<WrkRun> {
  const bin = findBinary({ name: 'wrk', debianPackage: 'wrk', brewFormula: 'wrk' });
  const script = join(args.dir, 'wrk-prepared.lua');
  writeFileSync(script, LUA);
  const out = await runCommand(
    bin,
    [
      '-t',
      String(args.threads),
      '-c',
      String(args.connections),
      '-d',
      `${args.seconds}s`,
      '--timeout',
      '10s',
      '-s',
      script,
      args.url,
      '--',
      args.prefix,
    ],
    { onStart: args.onStart },
  );
  const json = /WRK_JSON (\{.*\})/.exec(out)?.[1];
  if (!json) throw new Error(`wrk printed no summary:\n${out.slice(-2000)}`);
  const r = JSON.parse(json) as Record<string, number>;
  const ms = (us: number | undefined) => Math.round((us ?? 0) / 100) / 10;
  return {
    requests: r.requests ?? 0,
    non2xx: r.non2xx ?? 0,
    errors: r.errors ?? 0,
    seconds: (r.duration_us ?? 0) / 1e6,
    p50: ms(r.p50_us),
    p90: ms(r.p90_us),
    p99: ms(r.p99_us),
    max: ms(r.max_us),
    wrapped: r.wrapped ?? 0,
  };
}
