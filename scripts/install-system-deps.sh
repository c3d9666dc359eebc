#!/usr/bin/env bash
# Installs the Graphviz `dot` program where it is missing (Debian/Ubuntu apt, or brew on macOS).
# minigrad itself does not need it: `mg.viz` uses it to render graphs (without it, the demo
# writes the graph as .dot text and the tests that render are skipped).
set -e
if command -v dot >/dev/null 2>&1; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = "0" ] || SUDO="sudo"
  echo "install-system-deps: installing Graphviz (apt-get update && apt-get install graphviz${SUDO:+, through sudo}) for its 'dot' program, which minigrad's graph pictures need"
  $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null
elif command -v brew >/dev/null 2>&1; then
  echo "install-system-deps: installing Graphviz (brew install graphviz) for its 'dot' program, which minigrad's graph pictures need"
  brew install graphviz
else
  echo "warning: could not install Graphviz 'dot'; graph rendering will be skipped" >&2
fi
