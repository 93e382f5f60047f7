#!/usr/bin/env bash
# Runs make test and make test-e2e with go test -json and writes where its time went into docs/testing.md's
# test-times section (hack/testtimes): each phase make ran, each package, the slowest tests.
# test-times.sh [NOTE], NOTE saying how the caches stood ("build cache warm"). A failed run is
# shown and not written.
set -euo pipefail
cd "$(dirname "$0")/.."
note="${1:-build cache as found}; LAB=${LAB:-auto}"
go build -o bin/testtimes ./hack/testtimes
make --no-print-directory test test-e2e LAB="${LAB:-auto}" GOTESTFLAGS=-json 2>&1 |
  ./bin/testtimes -commit "$(git rev-parse --short HEAD)" -note "$note" -write docs/testing.md
echo "test-times: docs/testing.md's test-times section rewritten" >&2
