#!/usr/bin/env bash
# Builds Helm v4 from the Go module proxy into the cache folder (for the chart's tests).
# Reuses the machine's Go build and module caches, so a second build only links.
# Usage: scripts/build-helm.sh   (prints the path of the helm binary)
set -euo pipefail

HELM_VERSION="${SPEC_GUARD_HELM_VERSION:-v4.3.2}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SPEC_GUARD_CACHE:-$root/.cache}"
out="$cache/bin/helm-$HELM_VERSION"
mkdir -p "$cache/bin"

if [[ ! -x "$out" ]]; then
  printf '[build-helm] building helm %s (the first build takes a few minutes)\n' "$HELM_VERSION" >&2
  # Helm reads its own version from these variables; a plain `go build` leaves them empty.
  GOBIN="$cache/bin/helm-build" CGO_ENABLED=0 go install \
    -ldflags "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v4/cmd/helm@$HELM_VERSION" >&2
  mv "$cache/bin/helm-build/helm" "$out"
  rmdir "$cache/bin/helm-build"
fi
ln -sf "helm-$HELM_VERSION" "$cache/bin/helm"
echo "$out"
