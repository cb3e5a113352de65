#!/usr/bin/env bash
# Set up (or refresh) the project's pip environment in .venv from nothing:
# Python 3.11 venv, the pinned requirements (torch 2.13.0 CPU), and this package (editable).
# Idempotent: does nothing when .venv already matches requirements.txt and pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' 2>/dev/null || {
  echo "envs/venv.sh: Python 3.11 is required (found $("$PY" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
}

stamp=.venv/.mirage-installed
want=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi

echo "envs/venv.sh: installing pinned requirements into .venv (about 3 minutes the first time)..."
[[ -x .venv/bin/python ]] || "$PY" -m venv .venv
log=.venv/install.log
if ! { .venv/bin/python -m pip install --disable-pip-version-check -q -r requirements.txt &&
       .venv/bin/python -m pip install --disable-pip-version-check -q --no-deps -e .; } >"$log" 2>&1; then
  grep -v "is ignored: it is neither a file nor a directory" "$log" | tail -30 >&2
  echo "envs/venv.sh: pip install failed; full log in $log" >&2
  exit 1
fi
echo "$want" >"$stamp"
echo "envs/venv.sh: ready ($(.venv/bin/python -c 'import torch, snakemake; print("torch", torch.__version__, "snakemake", snakemake.__version__)'))"
