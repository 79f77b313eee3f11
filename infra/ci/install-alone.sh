#!/usr/bin/env bash
# What a user hits: each package installed alone from the built wheels into a fresh venv, at the
# newest dependencies and at its floors (lowest-direct), then imported, its console scripts'
# --help, its README's python examples and its cheap extras run. See infra/README.md.
#   bash infra/ci/install-alone.sh [--mode latest|lowest|both] [--only NAME] [-j N] [-v]
set -euo pipefail
cd "$(dirname "$0")/../.."

# The driver is standard library only but needs Python 3.11+ (tomllib), as the packages do.
PY=python3
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  PY=$(uv python find '>=3.11')
fi
exec "$PY" infra/ci/install_alone.py "$@"
