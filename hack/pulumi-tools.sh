#!/usr/bin/env bash
# Builds the Pulumi CLI, the Go language host and the Kubernetes provider from the Go module
# proxy into a per-version cache outside the clone, so that machines without a Pulumi install
# (CI, air-gapped hosts) can run real previews/ups in render mode. Each tool is built only when
# it is missing. Prints the bin directory on stdout; progress goes to stderr.
set -euo pipefail

PULUMI_VERSION=${PULUMI_VERSION:-v3.274.1}
LANGHOST_SDK_VERSION=${LANGHOST_SDK_VERSION:-v3.66.0}
K8S_PROVIDER_PSEUDO=${K8S_PROVIDER_PSEUDO:-v4.0.0-20260115033456-f47bc2d6f199}
K8S_SDK_VERSION=${K8S_SDK_VERSION:-v4.25.0}
K8S_STAMP_VERSION=${K8S_STAMP_VERSION:-4.32.0}

cache=${IGWLAB_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/igwlab/tools}
bin="$cache/pulumi-${PULUMI_VERSION}-k8s-${K8S_SDK_VERSION}/bin"
mkdir -p "$bin"
log() { echo "tools: $*" >&2; }

build_module() { # dir, module-require-line, replace-lines...
  local dir=$1 req=$2; shift 2
  mkdir -p "$dir"
  printf 'module igwlab.tools/throwaway\n\ngo 1.26\n\nrequire %s\n' "$req" >"$dir/go.mod"
  for r in "$@"; do printf 'replace %s\n' "$r" >>"$dir/go.mod"; done
}

if [ ! -x "$bin/pulumi" ]; then
  log "building pulumi CLI $PULUMI_VERSION (about 8 minutes on 2 cores)"
  d=$(mktemp -d)
  build_module "$d" "github.com/pulumi/pulumi/pkg/v3 $PULUMI_VERSION" \
    "github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e"
  printf 'package main\nimport _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"\n' >"$d/tools.go"
  (cd "$d" && go mod tidy >&2 &&
   go build -o "$bin/pulumi.tmp" \
     -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
     github.com/pulumi/pulumi/pkg/v3/cmd/pulumi >&2)
  mv "$bin/pulumi.tmp" "$bin/pulumi"
  rm -rf "$d"
fi

if [ ! -x "$bin/pulumi-language-go" ]; then
  log "building pulumi-language-go from sdk $LANGHOST_SDK_VERSION (about 1 minute)"
  d=$(mktemp -d)
  build_module "$d" "github.com/pulumi/pulumi/sdk/v3 $LANGHOST_SDK_VERSION" \
    "golang.org/x/text => golang.org/x/text v0.3.6"
  printf 'package main\nimport _ "github.com/pulumi/pulumi/sdk/v3/go/pulumi-language-go"\n' >"$d/tools.go"
  (cd "$d" && go mod tidy >&2 &&
   go build -o "$bin/pulumi-language-go.tmp" github.com/pulumi/pulumi/sdk/v3/go/pulumi-language-go >&2)
  mv "$bin/pulumi-language-go.tmp" "$bin/pulumi-language-go"
  rm -rf "$d"
fi

if [ ! -x "$bin/pulumi-resource-kubernetes" ]; then
  log "building pulumi-resource-kubernetes (about 12 minutes)"
  d=$(mktemp -d)
  build_module "$d" "github.com/pulumi/pulumi-kubernetes/provider/v4 $K8S_PROVIDER_PSEUDO" \
    "github.com/pulumi/pulumi-kubernetes/sdk/v4 => github.com/pulumi/pulumi-kubernetes/sdk/v4 $K8S_SDK_VERSION"
  src=$(cd "$d" && go mod download -json "github.com/pulumi/pulumi-kubernetes/provider/v4@$K8S_PROVIDER_PSEUDO" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  # The command embeds generated schema files that are not in the module zip: copy the
  # command into the throwaway module and generate them there.
  mkdir -p "$d/cmd"
  cp "$src/cmd/pulumi-resource-kubernetes/"* "$d/cmd/"
  chmod -R u+w "$d/cmd"
  (cd "$d" && go mod tidy >&2 && cd "$d/cmd" && VERSION=${K8S_SDK_VERSION#v} go run ./generate.go >&2 &&
   cd "$d" && go mod tidy >&2 &&
   go build -o "$bin/pulumi-resource-kubernetes.tmp" \
     -ldflags "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$K8S_STAMP_VERSION" ./cmd >&2)
  mv "$bin/pulumi-resource-kubernetes.tmp" "$bin/pulumi-resource-kubernetes"
  rm -rf "$d"
fi

echo "$bin"
