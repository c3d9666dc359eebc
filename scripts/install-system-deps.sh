#!/usr/bin/env bash
# Installs the Graphviz `dot` program where it is missing (Debian/Ubuntu apt, or brew on macOS).
set -e
if command -v dot >/dev/null 2>&1; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = "0" ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq graphviz >/dev/null
elif command -v brew >/dev/null 2>&1; then
  brew install graphviz
else
  echo "warning: could not install Graphviz 'dot'; graph rendering will be skipped" >&2
fi
