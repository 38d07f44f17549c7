#!/usr/bin/env bash
# Installs what stablebooks needs to run on this machine, and nothing it already has:
#   - npm dependencies (installed from the lock file when node_modules is missing or older than it);
#   - the CLI compiled into dist/cli when a source changed since it was (scripts/build-cli.js);
#   - the PostgreSQL and Redis server binaries, unless DATABASE_URL / REDIS_URL point at servers;
#   - the Prometheus server (test/e2e/prometheusAlerts.test.ts runs it against the daemon);
#   - Alertmanager, for its amtool (scripts/check-rules.sh checks grafana/alertmanager.yml);
#   - Chromium (test/e2e/reportHtml.test.ts opens the HTML report in it through playwright-core,
#     which never downloads a browser of its own);
#   - hledger, beancount (bean-check, bean-query) and ledger: test/e2e/exportCli.test.ts checks
#     `stablebooks export` files with the tools themselves.
# Extra commands a caller needs (a benchmark's load generator, say) are given as arguments, each
# a command whose Debian package and brew formula have its name: `ensure-deps.sh wrk`.
# As root on Debian/Ubuntu it uses apt-get; on macOS brew; otherwise it prints the exact command.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'stablebooks setup: %s\n' "$*" >&2; }

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dependencies"
  # `npm install --no-save` installs the locked versions without rewriting the lock file. Not
  # `npm ci`: registry mirrors that carry only this platform's optional binaries (biome, anvil,
  # esbuild) leave the other platforms out of the lock file, and npm ci then refuses it as out
  # of sync (docs/decisions.md).
  npm install --no-save --no-audit --no-fund --loglevel=error
fi

# bin/stablebooks.js runs the compiled CLI only while it is fresh, the sources through tsx
# otherwise; this keeps it fresh for the command that follows (quiet when it already is).
node scripts/build-cli.js

have_postgres() {
  command -v initdb >/dev/null 2>&1 && return 0
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && return 0
  ls /opt/homebrew/opt/postgresql@*/bin/initdb /usr/local/opt/postgresql@*/bin/initdb >/dev/null 2>&1
}
have_redis() { command -v redis-server >/dev/null 2>&1; }
have_prometheus() { command -v prometheus >/dev/null 2>&1 || [ -x /usr/bin/prometheus ]; }
have_amtool() { command -v amtool >/dev/null 2>&1 || [ -x /usr/bin/amtool ]; }
have_chromium() { command -v chromium >/dev/null 2>&1; }
have_hledger() { command -v hledger >/dev/null 2>&1; }
have_beancheck() { command -v bean-check >/dev/null 2>&1 && command -v bean-query >/dev/null 2>&1; }
have_ledger() { command -v ledger >/dev/null 2>&1; }

debs=()
brews=()
if [ -z "${DATABASE_URL:-}" ] && ! have_postgres; then debs+=(postgresql); brews+=(postgresql@15); fi
if [ -z "${REDIS_URL:-}" ] && ! have_redis; then debs+=(redis-server); brews+=(redis); fi
if ! have_prometheus; then debs+=(prometheus); brews+=(prometheus); fi
if ! have_amtool; then debs+=(prometheus-alertmanager); brews+=(alertmanager); fi
if ! have_hledger; then debs+=(hledger); brews+=(hledger); fi
# Debian's beancount is 2.x with bean-query; brew's is 3.x, whose bean-query moved to the separate
# beanquery (pip install beanquery) if the check above still fails after brew.
if ! have_beancheck; then debs+=(beancount); brews+=(beancount); fi
if ! have_ledger; then debs+=(ledger); brews+=(ledger); fi
# No brew formula: on macOS install Chromium yourself (brew install --cask chromium) if you run
# the browser test; the test fails and says so when /usr/bin/chromium is missing.
if ! have_chromium; then debs+=(chromium chromium-driver); fi
for extra in "$@"; do
  if ! command -v "$extra" >/dev/null 2>&1; then debs+=("$extra"); brews+=("$extra"); fi
done
[ ${#debs[@]} -eq 0 ] && exit 0

if [ "$(uname -s)" = Darwin ] && command -v brew >/dev/null 2>&1; then
  # Chromium alone has no brew entry here, so brews can be empty when debs is not.
  if [ ${#brews[@]} -gt 0 ]; then
    say "installing ${brews[*]} with brew"
    brew install "${brews[@]}"
  fi
elif command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  say "installing ${debs[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  # The packages' own services are not wanted: tests and the demo start private servers (and a
  # service cannot start in a container). A policy-rc.d that refuses every service start, for the
  # length of the install only.
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    own_policy=1
  fi
  trap 'if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi' EXIT
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${debs[@]}" >/dev/null
else
  if command -v apt-get >/dev/null 2>&1; then
    say "missing ${debs[*]}: run  sudo apt-get install -y ${debs[*]}  and try again"
  else
    say "missing ${debs[*]}: install them with your package manager (brew install ${brews[*]}) and try again"
  fi
  exit 1
fi
