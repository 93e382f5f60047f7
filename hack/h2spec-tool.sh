#!/usr/bin/env bash
# Builds h2spec, the HTTP/2 conformance suite the conformance tier runs against `igwlab serve`,
# from the Go module proxy at a pinned version, its dependencies pinned too (h2spec has no
# go.mod, so `go install` alone would take whatever is newest), into a per-version cache outside
# the clone. Built only when missing (about 15 s); prints the binary's path on stdout.
set -euo pipefail

H2SPEC_VERSION=${H2SPEC_VERSION:-v2.2.1}
cache=${IGWLAB_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/igwlab/tools}
bin="$cache/h2spec-$H2SPEC_VERSION/bin"
mkdir -p "$bin"

if [ ! -x "$bin/h2spec" ]; then
  echo "h2spec-tool: building h2spec $H2SPEC_VERSION" >&2
  d=$(mktemp -d)
  trap 'rm -rf "$d"' EXIT
  # The versions h2spec v2.2.1 was checked against; x/net's Framer is what h2spec reads the
  # server's frames with, so it is pinned like the suite itself.
  cat >"$d/go.mod" <<EOF
module igwlab.tools/h2spec

go 1.26

require (
	github.com/summerwind/h2spec $H2SPEC_VERSION+incompatible
	github.com/fatih/color v1.19.0
	github.com/mattn/go-colorable v0.1.14
	github.com/mattn/go-isatty v0.0.20
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.49.0
	golang.org/x/text v0.43.0
)
EOF
  printf 'package tools\n\nimport (\n\t_ "github.com/spf13/cobra"\n\t_ "github.com/summerwind/h2spec"\n)\n' >"$d/tools.go"
  (cd "$d" && go mod tidy >&2 && go build -o "$bin/h2spec.tmp" github.com/summerwind/h2spec/cmd/h2spec >&2)
  mv "$bin/h2spec.tmp" "$bin/h2spec"
fi
echo "$bin/h2spec"
