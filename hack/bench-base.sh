#!/usr/bin/env bash
# Builds igwlab at a git ref (the build the working tree replaces) for make bench's side-by-side
# pool cost: bench-base.sh REF OUT. Rebuilt only when REF moves; the source comes from
# `git archive`, so the working tree and its worktrees are left alone.
set -euo pipefail
ref=$1 out=$2
if ! rev=$(git rev-parse --verify -q "$ref^{commit}"); then
  # A clone has no local tags: compare with the last commit, what the working tree changes.
  [ "$ref" = bench-base ] || { echo "bench-base: no commit $ref (set BENCH_BASE to a git ref)" >&2; exit 1; }
  rev=$(git rev-parse --verify HEAD^{commit})
  echo "bench-base: no tag bench-base here; comparing with HEAD ($rev); set BENCH_BASE=<ref> for another" >&2
fi
if [ -x "$out" ] && [ "$(cat "$out.rev" 2>/dev/null)" = "$rev" ]; then exit 0; fi
echo "bench-base: building igwlab at $ref ($rev)" >&2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
git archive "$rev" | tar -x -C "$d"
mkdir -p "$(dirname "$out")"
abs="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
(cd "$d" && GOFLAGS=-buildvcs=false go build -o "$abs" ./runner/cmd/igwlab)
echo "$rev" >"$out.rev"
