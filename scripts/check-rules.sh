#!/usr/bin/env bash
# Checks the Prometheus alert rules with promtool: `promtool check rules` (syntax, PromQL) and
# `promtool test rules` (the unit tests in grafana/alerts.test.yml), and the Alertmanager
# configuration with `amtool check-config grafana/alertmanager.yml`. promtool comes with the
# Prometheus package, amtool with Alertmanager's; scripts/ensure-deps.sh installs them when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'stablebooks rules: %s\n' "$*" >&2; }

bash scripts/ensure-deps.sh
promtool="$(command -v promtool 2>/dev/null || true)"
[ -z "$promtool" ] && [ -x /usr/bin/promtool ] && promtool=/usr/bin/promtool
[ -n "$promtool" ] || { say "promtool not found although prometheus is installed"; exit 1; }

amtool="$(command -v amtool 2>/dev/null || true)"
[ -z "$amtool" ] && [ -x /usr/bin/amtool ] && amtool=/usr/bin/amtool
[ -n "$amtool" ] || { say "amtool not found although alertmanager is installed"; exit 1; }

"$promtool" check rules grafana/alerts.rules.yml
"$promtool" test rules grafana/alerts.test.yml
"$amtool" check-config grafana/alertmanager.yml
say "alert rules checked and their tests pass; the Alertmanager configuration is valid"
