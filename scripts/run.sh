#!/usr/bin/env bash
# Runs a stablebooks command after installing what it needs: `bash scripts/run.sh sandbox`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
exec node bin/stablebooks.js "$@"
