#!/usr/bin/env bash
# npm run demo: a real kube-apiserver, spec-guard guarding it: a refused `kubectl edit`, then an
# outage in which alice's change and delete land, reverted and brought back when spec-guard returns.
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

say "Starting a local control plane (kube-apiserver + etcd; the first run builds them, ~15 min on 2 cores)"
KUBECONFIG="$(scripts/control-plane.sh up)"
export KUBECONFIG
self_kubeconfig="$(dirname "$KUBECONFIG")/spec-guard.kubeconfig"

start_spec_guard() {
  setsid node dist/src/cli.js serve --config examples/spec-guard.yaml --kubeconfig "$self_kubeconfig" \
    --namespace spec-guard --bind-address 127.0.0.1 --port "$port" --metrics-port "$metrics_port" \
    --webhook-url "https://127.0.0.1:$port" >>"$demo/spec-guard.log" 2>&1 </dev/null &
  echo $! >"$demo/spec-guard.pid"
  for _ in $(seq 100); do grep -q '"spec-guard ready"' "$demo/spec-guard.log" && break; sleep 0.2; done
  grep -q '"spec-guard ready"' "$demo/spec-guard.log" || { cat "$demo/spec-guard.log"; exit 1; }
}
stop_spec_guard() {
  local pid; pid="$(cat "$demo/spec-guard.pid")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$demo/spec-guard.pid"
}
application() {
  kubectl "${agent[@]}" apply --server-side --field-manager=argocd-agent --force-conflicts -f - <<APP
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: $1, namespace: argocd}
spec:
  project: default
  source: {repoURL: "https://github.com/argoproj/argocd-example-apps.git", targetRevision: HEAD, path: guestbook}
  destination: {server: "https://kubernetes.default.svc", namespace: $1}
APP
}
status() { node dist/src/cli.js status --config examples/spec-guard.yaml | sed -n '1,/^layers/p'; }

say "Starting spec-guard on https://127.0.0.1:$port (metrics on http://127.0.0.1:$metrics_port/metrics)"
mkdir -p "$demo"
if [[ -f "$demo/spec-guard.pid" ]] && kill -0 "$(cat "$demo/spec-guard.pid")" 2>/dev/null; then
  echo "already running (pid $(cat "$demo/spec-guard.pid"))"
else
  : >"$demo/spec-guard.log"
  start_spec_guard
fi

say "The argocd-agent (trusted) creates two Applications; spec-guard stamps them"
application guestbook
application billing
kubectl get application -n argocd guestbook -o jsonpath='{.metadata.annotations.spec-guard\.io/stamp}{"\n"}'
echo "(the stamp: v2.<sha256 of the spec>.<sequence>.<HMAC> — proof, on the object itself, that this is the newest spec a trusted writer wrote)"

say "alice runs 'kubectl edit' and changes spec.source.targetRevision to 'my-branch': refused"
if KUBE_EDITOR="$root/test/e2e/fixtures/edit-target-revision.sh" TARGET_REVISION=my-branch \
  kubectl "${alice[@]}" edit application -n argocd guestbook; then
  echo "unexpected: the edit was admitted"; exit 1
fi
kubectl get application -n argocd guestbook -o jsonpath='stored targetRevision: {.spec.source.targetRevision}{"\n"}'

say "spec-guard status, once it has verified its admission objects in force (a few seconds after registering them)"
for _ in $(seq 100); do
  curl -s "http://127.0.0.1:$metrics_port/metrics" | grep -q 'spec_guard_admission_layer_intact{layer="tombstone"} 1' && break
  sleep 0.1
done
status

say "An outage: spec-guard is down, and an admin removes its admission policy"
stop_spec_guard
kubectl delete validatingadmissionpolicybinding,validatingadmissionpolicy spec-guard
sleep 2 # the apiserver drops a deleted policy at its next refresh
kubectl "${alice[@]}" patch application -n argocd guestbook --type merge -p '{"spec":{"source":{"targetRevision":"my-branch"}}}'
kubectl "${alice[@]}" delete application -n argocd billing
status

say "spec-guard is back: it reverts alice's change, brings billing back, and registers its policy again"
start_spec_guard
for _ in $(seq 50); do
  [[ "$(kubectl get application -n argocd guestbook -o jsonpath='{.spec.source.targetRevision}')" == HEAD ]] &&
    kubectl get application -n argocd billing >/dev/null 2>&1 && break
  sleep 0.1
done
kubectl get application -n argocd guestbook -o jsonpath='guestbook targetRevision: {.spec.source.targetRevision}{"\n"}'
kubectl get application -n argocd billing -o jsonpath='billing: back, uid {.metadata.uid}{"\n"}'
for _ in $(seq 30); do kubectl get validatingadmissionpolicy spec-guard >/dev/null 2>&1 && break; sleep 0.1; done
kubectl get validatingadmissionpolicy,validatingadmissionpolicybinding spec-guard -o name
sleep 1 # Events are written in the background
kubectl get events -n argocd --field-selector reason=SpecDriftReverted -o jsonpath='{range .items[*]}Event {.reason} on {.involvedObject.name}: {.message}{"\n"}{end}'
kubectl get events -n argocd --field-selector reason=DeletedObjectRecreated -o jsonpath='{range .items[*]}Event {.reason} on {.involvedObject.name}: {.message}{"\n"}{end}'
status

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
