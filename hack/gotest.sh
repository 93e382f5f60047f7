#!/usr/bin/env bash
# go test over test binaries kept between runs: links each package's test binary into a folder
# outside the clone (go test -c -o FILE skips the link when FILE is up to date: it compares the
# build IDs), then runs the binaries as go test runs them, -p at a time (1 by default).
#
#   gotest.sh [-p N] [-json] [-v] [-short] [-timeout D] [-run PATTERN] PACKAGE...
#
# Why: go test links every test binary anew. The packages that reach the Pulumi program link
# the Pulumi and Kubernetes SDKs, 15-20 s of CPU each; linking make test's 41 binaries took
# 97 s of wall time on 2 cores with the build cache warm, make test-e2e's eleven 45 s, all for
# binaries identical to the last run's. Under -p 1, go test also links each package's binary
# only after the package before it has run; here every binary is linked first, side by side.
#
# The binaries live in $IGWLAB_TESTBIN (default ~/.cache/igwlab/testbin), by import path;
# a change to a package or its flags relinks only what it changes. Each package's tests run in
# its folder, as go test runs them; -json prints go test -json's events (go tool test2json),
# otherwise go test's lines ("ok", "FAIL", the failures' output), each package's when it ends.
# A failing package does not stop the others; the exit status is 1 if any failed.
set -euo pipefail
GO=${GO:-go}
par=1 json=0 flags=() timeout=10m run=. pkgs=() tier=
while [ $# -gt 0 ]; do
  case $1 in
    -p) par=$2; shift ;;
    -json) json=1 ;;
    -v) flags+=(-test.v=true) ;;
    -short) flags+=(-test.short) tier=.short ;;
    -timeout) timeout=$2; shift ;;
    -run) run=$2; shift ;;
    -count=1) ;; # a binary run directly never caches
    -*) echo "gotest.sh: flag $1 is not one it passes on (-p, -json, -v, -short, -timeout, -run)" >&2; exit 2 ;;
    *) pkgs+=("$1") ;;
  esac
  shift
done
[ ${#pkgs[@]} -gt 0 ] || { echo "gotest.sh: no packages" >&2; exit 2; }
bins=${IGWLAB_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/igwlab/testbin}

# Each package's import path, folder, and test binary (go test -c names a package's binary
# after the package, or after its folder for a main package); a package without test files has
# none.
mapfile -t listed < <("$GO" list -f '{{.ImportPath}} {{.Dir}} {{if or .TestGoFiles .XTestGoFiles}}{{.Name}}{{end}}' "${pkgs[@]}" |
  awk '$3 == "main" { n = split($1, e, "/"); $3 = e[n] } $3 != "" { p = $1; sub("/[^/]*$", "", p); $3 = p "/" $3 ".test" } 1')
# One go test -c per parent folder (each go command loads its packages once: one per package
# took 40 s of a warm make test, checking that nothing needs linking), as many at once as the
# machine has cores (two packages of one folder with one name stop here, with go's error).
printf '%s\n' "${listed[@]}" | awk 'NF == 3 { d = $3; sub("/[^/]*$", "", d); g[d] = g[d] " " $1 } END { for (d in g) print d g[d] }' |
  xargs -r -P "$(nproc)" -L 1 sh -c 'b=$1 g=$2 && shift 2 && mkdir -p "$b/$g" && "$0" test -c -o "$b/$g/" "$@" >/dev/null' "$GO" "$bins" ||
  { echo "gotest.sh: building the test binaries failed" >&2; exit 1; }

since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.3f", e - s }'; }
outs=$(mktemp -d)
trap 'rm -rf "$outs"' EXIT
# runpkg runs one package's binary and prints its block in one piece (under a lock, so that
# packages running side by side never interleave their lines).
runpkg() {
  local p=$1 dir=$2 bin="$bins/$3" out="$outs/$4" status=0 start
  start=$(date +%s.%N)
  if [ $json = 1 ]; then
    (cd "$dir" && "$GO" tool test2json -t -p "$p" "$bin" -test.v=test2json -test.paniconexit0 \
      -test.timeout="$timeout" -test.run="$run" "${flags[@]}") >"$out" || status=1
  elif (cd "$dir" && "$bin" -test.paniconexit0 -test.timeout="$timeout" -test.run="$run" "${flags[@]}") >"$out" 2>&1; then
    case " ${flags[*]} " in *" -test.v=true "*) ;; *) : >"$out" ;; esac # go test shows a passing package's output under -v only
    printf 'ok  \t%s\t%ss\n' "$p" "$(since "$start")" >>"$out"
  else
    status=1
    printf 'FAIL\t%s\t%ss\n' "$p" "$(since "$start")" >>"$out"
  fi
  flock "$outs" cat "$out"
  # The next run's order, from whole runs only (-short's apart: its times differ).
  [ "$run" != . ] || since "$start" >"$bins/$3$tier.secs"
  return $status
}
# Side by side, the packages that took longest last time start first (then the pair ends
# together, not with one long package running alone at the end); one that has not run yet
# counts as the longest. One at a time, they keep the order given.
if [ "$par" -gt 1 ]; then
  mapfile -t listed < <(for line in "${listed[@]}"; do
    read -r _ _ bin <<<"$line"
    secs=999999
    [ -z "$bin" ] || [ ! -s "$bins/$bin$tier.secs" ] || secs=$(cat "$bins/$bin$tier.secs")
    printf '%s\t%s\n' "$secs" "$line"
  done | sort -s -t$'\t' -k1,1 -g -r | cut -f2-)
fi
failed=0 i=0 running=0
for line in "${listed[@]}"; do
  read -r p dir bin <<<"$line"
  i=$((i + 1))
  if [ -z "$bin" ]; then # go test's line, or its -json events, for a package without tests
    if [ $json = 1 ]; then
      t=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
      printf '{"Time":"%s","Action":"start","Package":"%s"}\n{"Time":"%s","Action":"output","Package":"%s","Output":"?   \\t%s\\t[no test files]\\n"}\n{"Time":"%s","Action":"skip","Package":"%s","Elapsed":0}\n' \
        "$t" "$p" "$t" "$p" "$p" "$t" "$p"
    else
      printf '?   \t%s\t[no test files]\n' "$p"
    fi
    continue
  fi
  if [ $running -ge "$par" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  runpkg "$p" "$dir" "$bin" "$i" &
  running=$((running + 1))
done
while [ $running -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit $failed
