#!/usr/bin/env bash
# The test command of README.md: installs what is missing, then runs every test against real
# PostgreSQL, Redis and anvil that the vitest global setup starts and stops itself.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
exec npx --no-install vitest run "$@"
