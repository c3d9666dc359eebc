#!/usr/bin/env bash
# Makes or reuses the project's virtual environment .venv/ (in the clone, git-ignored) and
# installs minigrad into it, editable, with one extra:
#
#     bash scripts/setup.sh examples     # what the examples need (the demo command)
#     bash scripts/setup.sh dev          # what the tests need, and torch (the test command)
#     bash scripts/setup.sh --check dev  # exit 0 if .venv is up to date for [dev], 1 if not
#
# Nothing is installed outside the clone: no global or --user packages, no pip cache, and
# matplotlib's cache goes to .venv/matplotlib (MPLCONFIGDIR, set for the venv's python). The
# exceptions are Graphviz's `dot` and, for dev, Chromium (the graph page's browser tests), which
# scripts/install-system-deps.sh installs with apt-get (or brew) where they are missing. A
# second run is quick: a stamp in .venv/ records a hash of pyproject.toml, this script and
# the extra, and nothing is reinstalled while it matches.
#
# torch (the `torch` extra, for the tests that compare with PyTorch): on Linux without an
# NVIDIA GPU, only torch's CPU build is installed (PyPI's default Linux wheel pulls gigabytes
# of CUDA libraries). It is looked for on https://download.pytorch.org/whl/cpu (probed with a
# short timeout; MINIGRAD_TORCH_CPU_INDEX overrides the address) and on pip's configured
# indexes. If no CPU build can be had, the torch comparisons are skipped, with a warning;
# under CI (CI set) the default wheel is installed instead, since CI must run them.
set -euo pipefail
cd "$(dirname "$0")/.."

check_only=0
if [ "${1:-}" = "--check" ]; then check_only=1; shift; fi
extra="${1:-}"
case "$extra" in
  dev|examples|viz|scipy|gpu|torch) ;;
  *) echo "usage: bash scripts/setup.sh [--check] dev|examples|viz|scipy|gpu|torch" >&2; exit 2 ;;
esac

VENV=.venv
PY="$VENV/bin/python"
STAMP="$VENV/.minigrad-setup-$extra"
say() { echo "setup: $*"; }

# Why pip could not install something: its ERROR lines (at most three) from the log it wrote,
# else the log's last three lines; each printed as "pip: ...".
pip_why() {
  local why
  why=$(grep -E '^(ERROR|error):' "$1" | head -n 3 || true)
  [ -n "$why" ] || why=$(grep -v '^WARNING: Location' "$1" | tail -n 3 || true)
  [ -n "$why" ] || why="(pip wrote nothing to $1)"
  printf '%s\n' "$why" | sed 's/^/pip: /'
}

venv_ok() { [ -x "$PY" ] && "$PY" -c "import sys" >/dev/null 2>&1 && "$PY" -m pip --version >/dev/null 2>&1; }

# The key of what is installed: pyproject.toml (its extras and pins), this script (how torch
# is chosen), and the extra.
key() { "$PY" - "$extra" <<'EOF'
import hashlib, sys
h = hashlib.sha256()
for name in ("pyproject.toml", "scripts/setup.sh"):
    with open(name, "rb") as f:
        h.update(f.read())
print(h.hexdigest(), sys.argv[1])
EOF
}

up_to_date() { venv_ok && [ -f "$STAMP" ] && [ "$(head -n 1 "$STAMP")" = "$(key)" ]; }

if [ "$check_only" = 1 ]; then
  if up_to_date; then exit 0; else exit 1; fi
fi

bash scripts/install-system-deps.sh "$extra"

if up_to_date; then
  say ".venv is up to date for [$extra]; nothing to install"
  if grep -q '^torch skipped' "$STAMP" && ! "$PY" -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)"; then
    say "(torch is not installed, so the torch comparisons are skipped: see $VENV/.torch-cpu-attempt.log)"
  fi
  exit 0
fi

if ! venv_ok; then
  base="${PYTHON:-python3}"
  rm -rf "$VENV"
  say "creating $VENV with $(command -v "$base") ($("$base" -c 'import platform; print(platform.python_version())'))"
  if ! "$base" -m venv "$VENV" || ! venv_ok; then
    rm -rf "$VENV"
    echo "setup: error: '$base -m venv' could not make a virtual environment with pip." >&2
    echo "setup: on Debian or Ubuntu install the venv module: sudo apt-get install python3-venv" >&2
    exit 1
  fi
fi

# matplotlib (the examples, the tests) keeps its font cache and config in .venv/, not in
# ~/.cache/matplotlib and ~/.config/matplotlib: a .pth line sets MPLCONFIGDIR, where unset, for
# the venv's python only.
site=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "import os, sys; os.environ.setdefault('MPLCONFIGDIR', os.path.join(sys.prefix, 'matplotlib'))" \
  >"$site/minigrad-venv-local.pth"

# Everything pip does stays in .venv: no cache in ~/.cache/pip, no self-check file.
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_REQUIRE_VIRTUALENV=1
pip() { "$PY" -m pip "$@"; }

rm -f "$STAMP"
say "installing minigrad[$extra] into $VENV (the first time takes a while)"
torch_note=""
if [ "$extra" != dev ]; then
  pip install -q -e ".[$extra]"
else
  # torch's pin, from pyproject.toml's `torch` extra.
  torch_pin=$(sed -n 's/^ *torch *= *\[ *"torch==\([^"]*\)".*/\1/p' pyproject.toml)
  has_nvidia=0
  if command -v nvidia-smi >/dev/null 2>&1 || [ -e /proc/driver/nvidia/version ]; then has_nvidia=1; fi
  if [ "$(uname -s)" != Linux ] || [ "$has_nvidia" = 1 ] || [ -z "$torch_pin" ]; then
    pip install -q -e ".[dev,torch]"   # PyPI's default wheel is the right one here
  else
    cpu_index="${MINIGRAD_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}"
    index_args=()
    index_note="pip looked on $cpu_index and on its configured indexes"
    if probe=$("$PY" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/torch/', timeout=5)" "$cpu_index" 2>&1); then
      index_args=(--extra-index-url "$cpu_index")
    else
      probe=$(printf '%s\n' "$probe" | tail -n 1)
      index_note="$cpu_index could not be reached (${probe:-no answer}), so pip looked on its configured indexes only"
      say "$cpu_index cannot be reached; looking for torch's CPU build on pip's configured indexes"
    fi
    constraint="$VENV/.torch-cpu-constraint.txt"
    echo "torch==${torch_pin}+cpu" >"$constraint"
    attempt_log="$VENV/.torch-cpu-attempt.log"  # pip's own account, kept out of the way
    if pip install -q -e ".[dev,torch]" -c "$constraint" "${index_args[@]}" >"$attempt_log" 2>&1; then
      cat "$attempt_log"
    elif [ -n "${CI:-}" ]; then
      cat "$attempt_log" >&2
      say "CI: no CPU build of torch==$torch_pin; installing the default wheel, as CI must run the torch comparisons"
      pip install -q -e ".[dev,torch]"
    else
      pip install -q -e ".[dev]"
      torch_note="torch skipped"
      echo "setup: warning: no CPU build of torch==$torch_pin could be installed (no NVIDIA GPU here, and PyPI's" >&2
      echo "setup: warning: default wheel pulls gigabytes of CUDA libraries), so the tests that compare with torch" >&2
      echo "setup: warning: will be skipped. Why: $index_note, and it said:" >&2
      pip_why "$attempt_log" | sed 's/^/setup: warning:   /' >&2
      echo "setup: warning: (pip's whole account: $attempt_log). To add torch's CPU build:" >&2
      echo "setup: warning:   $PY -m pip install torch==$torch_pin --index-url https://download.pytorch.org/whl/cpu" >&2
    fi
  fi
fi

{ key; [ -z "$torch_note" ] || echo "$torch_note"; } >"$STAMP"
say "done: minigrad[$extra] is installed in $VENV"
