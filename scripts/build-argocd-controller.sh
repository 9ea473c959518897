#!/usr/bin/env bash
# Builds Argo CD's application-controller (v3.2.11) from the Go module proxy into the cache
# folder, for the e2e suite's side-door tests. v3.2.11 is the newest v3 that builds from the
# proxy alone: v3.2.12's controller/cache calls a settings function its module lacks, v3.4+
# need an in-repo gitops-engine the proxy does not serve. Prints the binary's path: a link
# named argocd-application-controller (the binary picks its role by its name).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ARGOCD_VERSION="${SPEC_GUARD_ARGOCD_VERSION:-v3.2.11}"
cache="${SPEC_GUARD_CACHE:-$root/.cache}"
bin="$cache/bin"
out="$bin/argocd-$ARGOCD_VERSION"
link="$bin/argocd-$ARGOCD_VERSION.d/argocd-application-controller"
mkdir -p "$bin" "$(dirname "$link")"

if [[ ! -x "$out" ]]; then
  wrapper="$cache/modules/argocd-$ARGOCD_VERSION"
  mkdir -p "$wrapper"
  module=github.com/argoproj/argo-cd/v3
  upstream_mod="$(cd "$wrapper" && GOFLAGS=-mod=mod go mod download -json "$module@$ARGOCD_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  {
    printf 'module spec-guard.local/argocd\n\ngo 1.25.5\n\nrequire %s %s\n\n' "$module" "$ARGOCD_VERSION"
    # The module's own replace block (pinned k8s.io modules, CVE pins), copied verbatim.
    sed -n '/^replace (/,/^)/p' "$upstream_mod"
  } >"$wrapper/go.mod"
  printf '[build-argocd-controller] building Argo CD %s (about 4 minutes cold on 2 cores)\n' "$ARGOCD_VERSION" >&2
  (cd "$wrapper" && go get "$module/cmd@$ARGOCD_VERSION" >&2 && CGO_ENABLED=0 go build -o "$out.tmp" "$module/cmd" >&2)
  mv "$out.tmp" "$out"
fi
ln -sf "$out" "$link"
echo "$link"
