#!/usr/bin/env bash
# Installs the Debian packages whose commands are missing: apt-need.sh command:package ...
# (e.g. h2load:nghttp2-client). Uses sudo when not root. Does nothing when all are present.
set -euo pipefail
need=()
for pair in "$@"; do
  cmd="${pair%%:*}" pkg="${pair#*:}"
  command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
done
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
echo "installing ${need[*]} (apt-get)" >&2
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
