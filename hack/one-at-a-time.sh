#!/usr/bin/env bash
# Runs packages' tests one package at a time, as go test -p 1 does, but links every test binary
# first, side by side: under -p 1 go test links each package's binary only after the package
# before it has run, so the links (about 85 s for make test-e2e's packages on 2 cores, 45 s side
# by side) add up in wall time, between tests that need the machine to themselves.
#
#   one-at-a-time.sh [-json] [-v] [-timeout D] [-run PATTERN] PACKAGE...
#
# Each package's tests run in its folder, as go test runs them; -json prints go test -json's
# events (go tool test2json), otherwise go test's lines ("ok", "FAIL", the failures' output).
# A failing package does not stop the others; the exit status is 1 if any failed.
set -euo pipefail
GO=${GO:-go}
json=0 verbose=() timeout=10m run=. pkgs=()
while [ $# -gt 0 ]; do
  case $1 in
    -json) json=1 ;;
    -v) verbose=(-test.v=true) ;;
    -timeout) timeout=$2; shift ;;
    -run) run=$2; shift ;;
    -count=1) ;; # a binary run directly never caches
    -*) echo "one-at-a-time.sh: flag $1 is not one it passes on (-json, -v, -timeout, -run)" >&2; exit 2 ;;
    *) pkgs+=("$1") ;;
  esac
  shift
done
[ ${#pkgs[@]} -gt 0 ] || { echo "one-at-a-time.sh: no packages" >&2; exit 2; }

bins=$(mktemp -d)
trap 'rm -rf "$bins"' EXIT
# One go test -c per package, as many at once as the machine has cores, each binary in a folder
# numbered as the package's place in the list (go test -c -o dir/ with several packages names
# the binaries by package name, and two packages may share one).
printf '%s\n' "${pkgs[@]}" | awk '{print NR-1, $0}' |
  xargs -P "$(nproc)" -L 1 sh -c 'mkdir -p "$1/$2" && "$0" test -c -o "$1/$2/t.test" "$3" >/dev/null' "$GO" "$bins" ||
  { echo "one-at-a-time.sh: building the test binaries failed" >&2; exit 1; }

since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.3f", e - s }'; }
failed=0
i=0
for p in "${pkgs[@]}"; do
  bin="$bins/$i/t.test"
  i=$((i + 1))
  dir=$("$GO" list -f '{{.Dir}}' "$p")
  if [ ! -x "$bin" ]; then # a package without test files
    [ $json = 1 ] || printf '?   \t%s\t[no test files]\n' "$p"
    continue
  fi
  start=$(date +%s.%N)
  if [ $json = 1 ]; then
    (cd "$dir" && "$GO" tool test2json -t -p "$p" "$bin" -test.v=test2json -test.paniconexit0 \
      -test.timeout="$timeout" -test.run="$run") || failed=1
    continue
  fi
  out=$(mktemp)
  if (cd "$dir" && "$bin" -test.paniconexit0 -test.timeout="$timeout" -test.run="$run" "${verbose[@]}") >"$out" 2>&1; then
    [ ${#verbose[@]} = 0 ] || cat "$out"
    printf 'ok  \t%s\t%ss\n' "$p" "$(since "$start")"
  else
    failed=1
    cat "$out"
    printf 'FAIL\t%s\t%ss\n' "$p" "$(since "$start")"
  fi
  rm -f "$out"
done
exit $failed
