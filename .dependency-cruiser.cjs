/**
 * Layer rules of stablebooks, checked by `npm run lint` (dependency-cruiser). docs/architecture.md
 * explains the layers; a rule broken here is a design question, not a lint nit.
 */

/**
 * Every top-level part of src/ (and jobs/), lowest first: a part may import only parts listed
 * before it. This is what keeps the folders free of cycles: no part imports one that imports it
 * back, directly or through others.
 */
const LAYERS = [
  'src/clock.ts',
  'src/seededRandom.ts',
  'src/errors',
  'src/money',
  'src/html',
  'src/text',
  'src/http', // bearer-token checks shared by the operations routes
  'src/batching',
  'src/db',
  'src/logging',
  'src/followedClock.ts',
  'src/svc', // the service's protocol: signing, client, models, error taxonomy
  'src/findings', // every domain writes findings; recon reads them
  'src/ledger', // accounts, posting rules (pure), the poster
  'src/metrics',
  'src/alerts',
  'src/events', // the outbox of outbound events: written by the booking domains below, signed like alerts
  'src/config', // environment, stores, the chain registry
  'src/context', // the DomainContext every domain function is handed
  'src/suspense', // a person's classification of suspense; the rules that explain a transfer later undo it
  'src/corrections', // a person's corrections of the leftovers the rules leave for a person
  'src/chain', // the transfer indexer
  'src/payments',
  'src/payouts',
  'src/intake',
  'src/settlement', // books final chain transfers
  'src/inbox', // processes stored webhooks
  'src/recon',
  'src/export', // journal exports for hledger, beancount, ledger and CSV; reads the ledger
  'src/api', // the read-only HTTP API: reads the domain, served by the daemon
  'jobs',
  'src/daemon',
  'src/dashboards',
  'src/devservices',
  'src/sandbox',
  'src/doctor',
  'src/demo',
  'src/cli',
];

const pathOf = (part) => (part.endsWith('.ts') ? `^${part.replace(/\./g, '\\.')}$` : `^${part}/`);
const anyOf = (parts) => parts.map(pathOf).join('|');

/** The domain: code that books, matches and reports money. It never knows about its callers. */
const DOMAIN = [
  'src/alerts',
  'src/chain',
  'src/events',
  'src/findings',
  'src/inbox',
  'src/intake',
  'src/ledger',
  'src/payments',
  'src/payouts',
  'src/recon',
  'src/export', // journal exports for hledger, beancount, ledger and CSV; reads the ledger
  'src/settlement',
  'src/suspense',
  'src/corrections',
];

const layerRules = LAYERS.slice(0, -1).map((part, i) => ({
  name: `layer:${part}`,
  severity: 'error',
  comment: `${part} may import only the parts listed before it in .dependency-cruiser.cjs (LAYERS)`,
  from: { path: pathOf(part) },
  to: { path: anyOf(LAYERS.slice(i + 1)) },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'no module imports one that imports it back',
      from: { path: '^(src|jobs)/' },
      to: { circular: true },
    },
    {
      name: 'domain-not-callers',
      severity: 'error',
      comment: 'domain code never imports its callers: jobs/, src/daemon, src/cli',
      from: { path: anyOf(DOMAIN) },
      to: { path: '^(jobs/|src/daemon/|src/cli/)' },
    },
    {
      name: 'ledger-no-domain',
      severity: 'error',
      comment: 'the ledger knows accounts, entries and rules, never a domain that uses it',
      from: { path: '^src/ledger/' },
      to: { path: anyOf(DOMAIN.filter((d) => d !== 'src/ledger' && d !== 'src/findings')) },
    },
    {
      name: 'daemon-not-sandbox-or-demo',
      severity: 'error',
      comment: 'the simulator and the demo are never part of the daemon (only the CLI starts them)',
      from: { path: '^(jobs/|src/)', pathNot: '^src/(sandbox|demo|cli|devservices)/' },
      to: { path: '^src/(sandbox|demo)/' },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      from: { path: '^(src|jobs)/' },
      to: { couldNotResolve: true },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: 'node_modules' },
  },
};
