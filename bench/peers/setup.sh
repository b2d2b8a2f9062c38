#!/usr/bin/env bash
# Creates the benchmark venv (default: .venv-bench at the repo root) with agentcore-fx (editable)
# and the peer libraries, then installs pi-agent-core (npm) into bench/peers/node/node_modules.
# Dev-only: the peers are never dependencies of agentcore-fx.
# Usage: bash bench/peers/setup.sh [VENV_DIR]    # the venv, then the node peer
#        bash bench/peers/setup.sh --node        # the node peer only
#        bash bench/peers/setup.sh --evals       # the eval peer's venv only (.venv-bench-evals)
# Without npm, or when its install fails, the node peer is left out (one line says so) and the
# venv is still made: bench/peers/run.py then skips the pi-agent-core column.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NODE_DIR="$ROOT/bench/peers/node"

node_peer() {
  if ! command -v npm >/dev/null 2>&1; then
    echo "pi-agent-core: not installed (no npm on PATH); its benchmark rows will be skipped" >&2
    return 0
  fi
  # package.json pins @mariozechner/pi-agent-core 0.73.x; node_modules is not committed.
  if ! (cd "$NODE_DIR" && npm install --no-audit --no-fund --no-package-lock --loglevel=error); then
    echo "pi-agent-core: npm install failed; its benchmark rows will be skipped" >&2
  fi
}

if [ "${1:-}" = "--node" ]; then
  node_peer
  exit 0
fi
if [ "${1:-}" = "--evals" ]; then
  EVALS_VENV="${2:-$ROOT/.venv-bench-evals}"
  [ -x "$EVALS_VENV/bin/python" ] || "${PYTHON:-python3}" -m venv "$EVALS_VENV"
  "$EVALS_VENV/bin/python" -m pip install -q -r "$ROOT/bench/peers/evals-requirements.txt"
  exit 0
fi
VENV="${1:-${BENCH_VENV:-$ROOT/.venv-bench}}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q -e "$ROOT" -r "$ROOT/bench/peers/requirements.txt"
touch "$VENV/.bench-ready"
node_peer
