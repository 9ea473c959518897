#!/usr/bin/env bash
# npm run demo: a real kube-apiserver, spec-guard guarding it, and a refused `kubectl edit`.
#   scripts/demo.sh        bring everything up and show the refusal; leaves it running
#   scripts/demo.sh down   stop spec-guard and the control plane
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CP_NAME=demo CP_APISERVER_PORT="${CP_APISERVER_PORT:-16443}" CP_ETCD_PORT="${CP_ETCD_PORT:-12379}"
demo="$root/.cache/demo"
port="${DEMO_WEBHOOK_PORT:-18443}"
metrics_port="${DEMO_METRICS_PORT:-18080}"
agent=(--as=system:serviceaccount:argocd:argocd-agent-agent)
alice=(--as=alice --as-group=developers)

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

if [[ "${1:-}" == "down" ]]; then
  if [[ -f "$demo/spec-guard.pid" ]]; then kill "$(cat "$demo/spec-guard.pid")" 2>/dev/null || true; fi
  scripts/control-plane.sh down
  rm -rf "$demo"
  exit 0
fi

say "Starting a local control plane (kube-apiserver + etcd; the first run builds them, ~5 min)"
KUBECONFIG="$(scripts/control-plane.sh up)"
export KUBECONFIG
self_kubeconfig="$(dirname "$KUBECONFIG")/spec-guard.kubeconfig"

say "Starting spec-guard on https://127.0.0.1:$port (metrics on http://127.0.0.1:$metrics_port/metrics)"
mkdir -p "$demo"
if [[ -f "$demo/spec-guard.pid" ]] && kill -0 "$(cat "$demo/spec-guard.pid")" 2>/dev/null; then
  echo "already running (pid $(cat "$demo/spec-guard.pid"))"
else
  setsid node dist/src/cli.js serve --config examples/spec-guard.yaml --kubeconfig "$self_kubeconfig" \
    --namespace spec-guard --bind-address 127.0.0.1 --port "$port" --metrics-port "$metrics_port" \
    --webhook-url "https://127.0.0.1:$port" >"$demo/spec-guard.log" 2>&1 </dev/null &
  echo $! >"$demo/spec-guard.pid"
  for _ in $(seq 100); do grep -q '"spec-guard ready"' "$demo/spec-guard.log" && break; sleep 0.2; done
  grep -q '"spec-guard ready"' "$demo/spec-guard.log" || { cat "$demo/spec-guard.log"; exit 1; }
fi

say "The argocd-agent (trusted) creates an Application"
kubectl "${agent[@]}" apply --server-side --field-manager=argocd-agent --force-conflicts -f - <<'APP'
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec:
  project: default
  source: {repoURL: "https://github.com/argoproj/argocd-example-apps.git", targetRevision: HEAD, path: guestbook}
  destination: {server: "https://kubernetes.default.svc", namespace: guestbook}
APP
kubectl get application -n argocd guestbook -o jsonpath='{.metadata.annotations.spec-guard\.io/stamp}{"\n"}'

say "alice runs 'kubectl edit' and changes spec.source.targetRevision to 'my-branch'"
if KUBE_EDITOR="$root/test/e2e/fixtures/edit-target-revision.sh" TARGET_REVISION=my-branch \
  kubectl "${alice[@]}" edit application -n argocd guestbook; then
  echo "unexpected: the edit was admitted"; exit 1
fi

say "The stored spec is unchanged"
kubectl get application -n argocd guestbook -o jsonpath='targetRevision: {.spec.source.targetRevision}{"\n"}'

cat <<MSG

Everything is still running. Try more:
  export KUBECONFIG=$KUBECONFIG
  kubectl ${alice[*]} patch application -n argocd guestbook --type merge -p '{"spec":{"project":"other"}}'
  kubectl ${alice[*]} delete application -n argocd guestbook
  kubectl ${alice[*]} label application -n argocd guestbook team=payments     # allowed
  curl -s http://127.0.0.1:$metrics_port/metrics | grep spec_guard_admission_requests_total
  tail -f $demo/spec-guard.log
Tear down:
  npm run demo:down
MSG
