#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the Go module proxy into the cache folder.
# Reuses the machine's Go build and module caches, so a second build only links.
# Usage: scripts/build-control-plane.sh   (prints the bin folder)
set -euo pipefail

KUBE_VERSION="${SPEC_GUARD_KUBE_VERSION:-v1.34.4}"
ETCD_VERSION="${SPEC_GUARD_ETCD_VERSION:-v3.6.16}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SPEC_GUARD_CACHE:-$root/.cache}"
bin="$cache/bin"
mkdir -p "$bin"

log() { printf '[build-control-plane] %s\n' "$*" >&2; }

# wrapped_build MODULE VERSION PACKAGE OUTPUT LOCAL_VERSION
# Upstream modules point their sibling modules at local folders with replace
# directives, which `go install mod@version` refuses. A throwaway wrapper module
# requires MODULE and replaces each such sibling with its published LOCAL_VERSION.
wrapped_build() {
  local module="$1" version="$2" package="$3" out="$4" local_version="$5"
  [[ -x "$out" ]] && return 0
  local wrapper
  wrapper="$cache/modules/$(basename "$out")"
  mkdir -p "$wrapper"
  local upstream_mod
  upstream_mod="$(cd "$wrapper" && GOFLAGS=-mod=mod go mod download -json "$module@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  {
    printf 'module spec-guard.local/%s\n\ngo 1.24.0\n\nrequire %s %s\n\nreplace (\n' "$(basename "$out")" "$module" "$version"
    grep -E '^\s+[^ ]+ => \.\.?/' "$upstream_mod" | grep -v FORBIDDEN | awk -v v="$local_version" '{print "\t" $1 " => " $1 " " v}'
    printf ')\n'
  } >"$wrapper/go.mod"
  log "building $package $version (the first build takes several minutes)"
  (cd "$wrapper" && go get "$package@$version" >&2 && CGO_ENABLED=0 go build -o "$out.tmp" "$package" >&2)
  mv "$out.tmp" "$out"
}

if ! wrapped_build go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3 "$bin/etcd-$ETCD_VERSION" "$ETCD_VERSION"; then
  # Fallback: Debian's etcd-server 3.4 serves the apiserver just as well for tests.
  command -v etcd >/dev/null || { log "etcd build failed; 'apt-get install etcd-server' is the fallback"; exit 1; }
  ln -sf "$(command -v etcd)" "$bin/etcd-$ETCD_VERSION"
fi
# k8s.io/kubernetes replaces its staging modules (k8s.io/api …) with ./staging; their
# published tags are v0.X.Y for release v1.X.Y.
wrapped_build k8s.io/kubernetes "$KUBE_VERSION" k8s.io/kubernetes/cmd/kube-apiserver \
  "$bin/kube-apiserver-$KUBE_VERSION" "v0.${KUBE_VERSION#v1.}"
ln -sf "kube-apiserver-$KUBE_VERSION" "$bin/kube-apiserver"
ln -sf "etcd-$ETCD_VERSION" "$bin/etcd"
echo "$bin"
