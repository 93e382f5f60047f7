#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager from k8s.io/kubernetes through the Go module
# proxy into a per-version cache outside the clone, for the tests that run a real API server on
# loopback. Built only when missing; prints the bin directory on stdout, progress on stderr.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.34.2}
STAGING_VERSION=v0${K8S_VERSION#v1}   # v1.34.2 -> v0.34.2
cache=${IGWLAB_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/igwlab/tools}
bin="$cache/kubernetes-$K8S_VERSION/bin"
mkdir -p "$bin"
log() { echo "kube-tools: $*" >&2; }

missing=()
for t in kube-apiserver kube-controller-manager; do
  [ -x "$bin/$t" ] || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "building ${missing[*]} $K8S_VERSION (about 9 minutes on 2 cores)"
  d=$(mktemp -d)
  src=$(cd "$d" && printf 'module x\n\ngo 1.26\n' >go.mod &&
    go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  {
    printf 'module igwlab.tools/kube\n\ngo 1.26\n\ngodebug default=go1.24\n\nrequire k8s.io/kubernetes %s\n\n' "$K8S_VERSION"
    # k8s.io/kubernetes replaces its staging modules with local paths; point them at the
    # published modules of the same release instead.
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*#\1#p' "$src/go.mod" |
      while read -r m; do printf 'replace %s => %s %s\n' "$m" "$m" "$STAGING_VERSION"; done
  } >"$d/go.mod"
  printf 'package main\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"\n)\n' >"$d/tools.go"
  ldflags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
  (cd "$d" && go mod tidy >&2 &&
    for t in "${missing[@]}"; do
      go build -o "$bin/$t.tmp" -ldflags "$ldflags" "k8s.io/kubernetes/cmd/$t" >&2 && mv "$bin/$t.tmp" "$bin/$t"
    done)
  rm -rf "$d"
fi
echo "$bin"
