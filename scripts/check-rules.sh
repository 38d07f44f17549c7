#!/usr/bin/env bash
# Checks the Prometheus alert rules with promtool: `promtool check rules` (syntax, PromQL) and
# `promtool test rules` (the unit tests in grafana/alerts.test.yml). promtool comes from the
# Debian package `prometheus`; as root on Debian/Ubuntu this installs it when missing, like
# scripts/ensure-deps.sh does for PostgreSQL and Redis.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'stablebooks rules: %s\n' "$*" >&2; }

find_promtool() {
  command -v promtool 2>/dev/null && return 0
  [ -x /usr/bin/promtool ] && echo /usr/bin/promtool && return 0
  return 1
}

if ! promtool="$(find_promtool)"; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "installing prometheus (for promtool) with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    # The package's own service is not wanted (and cannot start in a container): a policy-rc.d
    # that refuses every service start, for the length of the install only.
    policy=/usr/sbin/policy-rc.d
    own_policy=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' >"$policy"
      chmod +x "$policy"
      own_policy=1
    fi
    trap 'if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi' EXIT
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  else
    if command -v apt-get >/dev/null 2>&1; then
      say "missing promtool: run  sudo apt-get install -y --no-install-recommends prometheus  and try again"
    else
      say "missing promtool: install Prometheus (brew install prometheus) and try again"
    fi
    exit 1
  fi
  promtool="$(find_promtool)" || { say "promtool still not found after installing prometheus"; exit 1; }
fi

"$promtool" check rules grafana/alerts.rules.yml
"$promtool" test rules grafana/alerts.test.yml
say "alert rules checked and their tests pass"
