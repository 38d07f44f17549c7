#!/usr/bin/env bash
# Runs a stablebooks command after installing what it needs: `bash scripts/run.sh sandbox`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
# A small young generation keeps the daemon's memory low under load (docs/decisions.md).
exec node --max-semi-space-size=4 bin/stablebooks.js "$@"
