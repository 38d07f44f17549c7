import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig.ts';

/**
 * docker-compose.yml cannot be run here (no Docker in tests or CI), so its structure is checked:
 * every service a depends_on names exists, every repository path it mounts exists, Prometheus
 * scrapes the daemon's service name, and the inline configs are what the daemon and the sandbox
 * accept. No YAML library is a dependency: the file is read with a small reader for the subset
 * it uses (two-space indentation, services at depth 1, their keys at depth 2), which fails loudly
 * when the file stops following it.
 */
const ROOT = join(import.meta.dirname, '../..');
const text = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
const lines = text.split('\n');

const indentOf = (line: string) => line.length - line.trimStart().length;
const meaningful = (line: string) => line.trim() !== '' && !line.trim().startsWith('#');

/** The lines under a top-level key (`services:`, `configs:`), indentation kept. */
function section(key: string): string[] {
  const start = lines.indexOf(`${key}:`);
  expect(start, `top-level ${key}: in docker-compose.yml`).toBeGreaterThanOrEqual(0);
  const out: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (meaningful(line) && indentOf(line) === 0) break;
    out.push(line);
  }
  return out;
}

/** Children at depth 1 of a section: name to their lines (deeper lines, indentation kept). */
function children(sectionLines: string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of sectionLines) {
    if (meaningful(line) && indentOf(line) === 2) {
      const m = /^ {2}([\w-]+):\s*$/.exec(line);
      expect(m, `a depth-1 key: ${line}`).not.toBeNull();
      current = [];
      out.set(m![1]!, current);
    } else if (current) current.push(line);
  }
  return out;
}

/** The lines under a depth-2 key of a service (`depends_on`, `volumes`), or its inline value. */
function key(serviceLines: string[], name: string): { inline: string | null; block: string[] } {
  const i = serviceLines.findIndex((l) => new RegExp(`^ {4}${name}:`).test(l));
  if (i < 0) return { inline: null, block: [] };
  const inline = serviceLines[i]!.replace(new RegExp(`^ {4}${name}:\\s*`), '').trim() || null;
  const block: string[] = [];
  for (const line of serviceLines.slice(i + 1)) {
    if (meaningful(line) && indentOf(line) <= 4) break;
    if (meaningful(line)) block.push(line);
  }
  return { inline, block };
}

const services = children(section('services'));
const configs = children(section('configs'));

/** The text of an inline config (`content: |`), its block indentation removed. */
function configContent(name: string): string {
  const body = configs.get(name);
  expect(body, `config ${name}`).toBeDefined();
  const i = body!.findIndex((l) => /^ {4}content: \|\s*$/.test(l));
  expect(i, `config ${name}: content: |`).toBeGreaterThanOrEqual(0);
  const block: string[] = [];
  for (const line of body!.slice(i + 1)) {
    if (line.trim() !== '' && indentOf(line) < 6) break;
    block.push(line.slice(6));
  }
  return block.join('\n');
}

describe('docker-compose.yml: the whole stack', () => {
  it('invariant: it has every service of the stack', () => {
    expect([...services.keys()].sort()).toEqual(
      ['anvil', 'daemon', 'grafana', 'migrate', 'postgres', 'prometheus', 'redis', 'sandbox'].sort(),
    );
    expect(key(services.get('anvil')!, 'image').inline).toMatch(/^ghcr\.io\/foundry-rs\/foundry/);
    expect(key(services.get('anvil')!, 'command').inline).toContain('anvil --host 0.0.0.0');
  });

  it('invariant: every service named in depends_on exists, with a known condition', () => {
    let edges = 0;
    for (const [name, body] of services) {
      for (const line of key(body, 'depends_on').block) {
        const m = /^ {6}([\w-]+):\s*\{\s*condition:\s*(\w+)\s*\}\s*$/.exec(line);
        expect(m, `${name}: depends_on entry ${line}`).not.toBeNull();
        expect(services.has(m![1]!), `${name} depends on ${m![1]}`).toBe(true);
        expect(['service_healthy', 'service_completed_successfully', 'service_started']).toContain(m![2]);
        if (m![2] === 'service_healthy') {
          expect(
            key(services.get(m![1]!)!, 'healthcheck').block.length,
            `${m![1]} healthcheck`,
          ).toBeGreaterThan(0);
        }
        edges++;
      }
    }
    expect(edges).toBeGreaterThan(0);
    const daemon = key(services.get('daemon')!, 'depends_on').block.join('\n');
    expect(daemon).toMatch(/migrate: \{ condition: service_completed_successfully \}/);
    for (const dep of ['postgres', 'redis', 'anvil', 'sandbox']) {
      expect(daemon).toMatch(new RegExp(`${dep}: \\{ condition: service_healthy \\}`));
    }
  });

  it('invariant: every long-running service has a healthcheck; every named volume is declared', () => {
    const declared = new Set(children(section('volumes')).keys());
    for (const [name, body] of services) {
      if (name !== 'migrate')
        expect(key(body, 'healthcheck').block.length, `${name} healthcheck`).toBeGreaterThan(0);
      const volumes = key(body, 'volumes');
      const entries = [
        ...(volumes.inline?.replace(/^\[|\]$/g, '').split(',') ?? []),
        ...volumes.block.map((l) => l.replace(/^\s*-\s*/, '')),
      ].map((v) => v.trim());
      for (const entry of entries.filter(Boolean)) {
        const source = entry.split(':')[0]!;
        if (source.startsWith('.') || source.startsWith('/')) {
          expect(existsSync(join(ROOT, source)), `${name} mounts ${source}`).toBe(true);
        } else expect(declared.has(source), `${name}: volume ${source} declared`).toBe(true);
      }
    }
    const mounts = (name: string) => key(services.get(name)!, 'volumes').block.join('\n');
    expect(mounts('prometheus')).toContain('./grafana/prometheus.yml:/etc/prometheus/prometheus.yml');
    expect(mounts('prometheus')).toContain('./grafana/alerts.rules.yml:/etc/prometheus/alerts.rules.yml');
    expect(mounts('grafana')).toContain('./grafana/provisioning:/etc/grafana/provisioning');
    expect(mounts('grafana')).toContain('./grafana/dashboards:/var/lib/grafana/dashboards');
  });

  it('invariant: Prometheus scrapes the daemon service, and Grafana reads the prometheus service', () => {
    expect(readFileSync(join(ROOT, 'grafana/prometheus.yml'), 'utf8')).toMatch(/targets: \["daemon:8080"\]/);
    expect(readFileSync(join(ROOT, 'grafana/provisioning/datasources/prometheus.yml'), 'utf8')).toContain(
      'url: http://prometheus:9090',
    );
  });

  describe('the inline configs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stablebooks-compose-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('behavior: the daemon accepts its stores and chains files with the compose environment', () => {
      writeFileSync(join(dir, 'stores.json'), configContent('daemon_stores'));
      writeFileSync(join(dir, 'chains.json'), configContent('daemon_chains'));
      const env: Record<string, string> = {};
      for (const line of key(services.get('daemon')!, 'environment').block) {
        const m = /^ {6}(\w+):\s*(.*)$/.exec(line);
        if (m) env[m[1]!] = m[2]!.replace(/^"(.*)"$/, '$1');
      }
      env.STORES_FILE = join(dir, 'stores.json');
      env.CHAINS_FILE = join(dir, 'chains.json');
      const config = loadConfig(env);
      expect(config.stores.map((s) => s.storeId)).toEqual(['st_demo']);
      expect(
        config.chains
          .chain(11155111)
          ?.tokens.map((t) => t.symbol)
          .sort(),
      ).toEqual(['USDC', 'USDT']);
      expect(config.rpcUrls.get(11155111)).toEqual(['http://anvil:8545']);
    });

    it('behavior: the sandbox store is the daemon store, and sends its webhooks to the daemon', () => {
      const sandbox = JSON.parse(configContent('sandbox_stores')) as {
        businesses: Array<{ business_id: string; stores: Array<Record<string, unknown>> }>;
      };
      const store = sandbox.businesses[0]!.stores[0]!;
      const daemonStore = (JSON.parse(configContent('daemon_stores')) as Array<Record<string, unknown>>)[0]!;
      expect(store.store_id).toBe(daemonStore.store_id);
      expect(sandbox.businesses[0]!.business_id).toBe(daemonStore.business_id);
      expect(store.api_key).toBe(daemonStore.api_key);
      expect(text).toContain(`SVC_SECRET_ST_DEMO: ${store.api_secret}`);
      expect(store.checkout_webhook_url).toBe('http://daemon:8080/webhooks/checkout');
      expect(store.claim_link_webhook_url).toBe('http://daemon:8080/webhooks/claim-links');
    });
  });
});
