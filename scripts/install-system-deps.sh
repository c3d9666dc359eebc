#!/usr/bin/env bash
# Installs the system programs minigrad's optional parts use, where they are missing:
#   - Graphviz's `dot` (for every extra): `mg.viz.graph` and `mg.viz.save` render pictures with it
#     (without it, the demo writes the graph as .dot text and the tests that render are skipped);
#   - Chromium (for the `dev` extra only: `bash scripts/install-system-deps.sh dev`, as
#     scripts/setup.sh passes it): tests/test_viz_html.py opens the graph page (`mg.viz.html`) in
#     headless Chromium through Playwright; without it those tests skip, except under CI.
# minigrad itself needs neither. Debian/Ubuntu: apt-get; macOS: brew. Says what and why first.
set -e
extra="${1:-}"
SUDO=""; [ "$(id -u)" = "0" ] || SUDO="sudo"

pkgs=()
why=""
if ! command -v dot >/dev/null 2>&1; then
  pkgs+=(graphviz)
  why="Graphviz for its 'dot' program, which minigrad's graph pictures need"
fi
if [ "$extra" = dev ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
   && ! command -v google-chrome >/dev/null 2>&1; then
  pkgs+=(chromium)
  why="${why:+$why; and }Chromium, the browser the graph page's tests (tests/test_viz_html.py) run in"
fi
[ "${#pkgs[@]}" = 0 ] && exit 0

if command -v apt-get >/dev/null 2>&1; then
  echo "install-system-deps: installing ${pkgs[*]} (apt-get update && apt-get install ${pkgs[*]}${SUDO:+, through sudo}): $why"
  $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
elif command -v brew >/dev/null 2>&1; then
  echo "install-system-deps: installing ${pkgs[*]} (brew install): $why"
  for p in "${pkgs[@]}"; do
    if [ "$p" = chromium ]; then brew install --cask chromium; else brew install "$p"; fi
  done
else
  echo "warning: could not install ${pkgs[*]} ($why); graph rendering and the graph page's browser tests will be skipped" >&2
fi
