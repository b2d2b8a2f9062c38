#!/usr/bin/env bash
# Creates the benchmark venv (default: .venv-bench at the repo root) with agentcore-fx (editable)
# and the peer libraries. Dev-only: the peers are never dependencies of agentcore-fx.
# Usage: bash bench/peers/setup.sh [VENV_DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${1:-${BENCH_VENV:-$ROOT/.venv-bench}}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q -e "$ROOT" -r "$ROOT/bench/peers/requirements.txt"
touch "$VENV/.bench-ready"
