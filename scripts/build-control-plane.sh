#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and etcd from the Go module proxy into the
# cache folder. (The controller manager runs only the garbage collector: what an uninstall
# relies on to remove the admission objects spec-guard registered.)
# Reuses the machine's Go build and module caches, so a second build only links.
# Usage: scripts/build-control-plane.sh   (prints the kube-apiserver binary, the etcd one, then
# the kube-controller-manager one when SPEC_GUARD_BUILD_CONTROLLER_MANAGER=1)
# SPEC_GUARD_KUBE_VERSION picks another Kubernetes version (scripts/versions.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/versions.sh
source "$root/scripts/versions.sh"
KUBE_VERSION="${SPEC_GUARD_KUBE_VERSION:-$KUBE_VERSION_DEFAULT}"
ETCD_VERSION="${SPEC_GUARD_ETCD_VERSION:-$ETCD_VERSION_DEFAULT}"
cache="${SPEC_GUARD_CACHE:-$root/.cache}"
bin="$cache/bin"
mkdir -p "$bin"

log() { printf '[build-control-plane] %s\n' "$*" >&2; }

# wrapped_build MODULE VERSION PACKAGE OUTPUT LOCAL_VERSION
# Upstream modules point their sibling modules at local folders with replace
# directives, which `go install mod@version` refuses. A throwaway wrapper module
# requires MODULE and replaces each such sibling with its published LOCAL_VERSION.
wrapped_build() {
  local module="$1" version="$2" package="$3" out="$4" local_version="$5" ldflags="${6:-}"
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
  (cd "$wrapper" && go get "$package@$version" >&2 && CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$out.tmp" "$package" >&2)
  mv "$out.tmp" "$out"
}

if ! wrapped_build go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3 "$bin/etcd-$ETCD_VERSION" "$ETCD_VERSION"; then
  # Fallback: Debian's etcd-server 3.4 serves the apiserver just as well for tests.
  command -v etcd >/dev/null || { log "etcd build failed; 'apt-get install etcd-server' is the fallback"; exit 1; }
  ln -sf "$(command -v etcd)" "$bin/etcd-$ETCD_VERSION"
fi
# k8s.io/kubernetes replaces its staging modules (k8s.io/api …) with ./staging; their
# published tags are v0.X.Y for release v1.X.Y.
# The version the apiserver reports (/version, and the emulation version it derives from it):
# what `make` stamps into a release build; a plain `go build` leaves a placeholder.
minor="${KUBE_VERSION#v1.}"
minor="${minor%%.*}"
version_pkg=k8s.io/component-base/version
kube_ldflags="-X $version_pkg.gitVersion=$KUBE_VERSION -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=$minor -X $version_pkg.gitTreeState=clean"
wrapped_build k8s.io/kubernetes "$KUBE_VERSION" k8s.io/kubernetes/cmd/kube-apiserver \
  "$bin/kube-apiserver-$KUBE_VERSION" "v0.${KUBE_VERSION#v1.}" "$kube_ldflags"
echo "$bin/kube-apiserver-$KUBE_VERSION"
echo "$bin/etcd-$ETCD_VERSION"
# Only for control planes that run controllers (SPEC_GUARD_BUILD_CONTROLLER_MANAGER=1).
if [[ -n "${SPEC_GUARD_BUILD_CONTROLLER_MANAGER:-}" ]]; then
  wrapped_build k8s.io/kubernetes "$KUBE_VERSION" k8s.io/kubernetes/cmd/kube-controller-manager \
    "$bin/kube-controller-manager-$KUBE_VERSION" "v0.${KUBE_VERSION#v1.}" "$kube_ldflags"
  echo "$bin/kube-controller-manager-$KUBE_VERSION"
fi
