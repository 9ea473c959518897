#!/usr/bin/env bash
# The e2e suite on a kind cluster, for machines with Docker. spec-guard runs in the
# cluster from its image and manifests/, exactly as installed in production.
#
# Needs: docker (a running engine), kind, kubectl, npm (Node.js 24 comes with npm ci, for the test runner).
# Usage: scripts/e2e-kind.sh            create or reuse the cluster, build, load, deploy, test
#        KEEP_CLUSTER=1 scripts/e2e-kind.sh   leave the cluster up afterwards
#
# The admission and manifests suites run against the in-cluster spec-guard. The sync
# suite stops, kills and restarts spec-guard's process with a file store; it runs on the
# local control plane (npm test) and is skipped here.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster="${KIND_CLUSTER:-spec-guard-e2e}"
image="spec-guard:e2e"

for tool in docker kind kubectl npm; do
  command -v "$tool" >/dev/null || { echo "e2e-kind: $tool is required" >&2; exit 1; }
done
docker info >/dev/null 2>&1 || { echo "e2e-kind: no Docker engine is running" >&2; exit 1; }

# The apiserver presents its front-proxy client certificate to webhooks, as every shipped
# install expects (spec-guard --client-ca-from-cluster; docs/install.md shows the same).
admission="$(mktemp -d)"
cat >"$admission/kubeconfig.yaml" <<'KUBECONFIG'
apiVersion: v1
kind: Config
users:
- name: '*'
  user:
    client-certificate: /etc/kubernetes/pki/front-proxy-client.crt
    client-key: /etc/kubernetes/pki/front-proxy-client.key
KUBECONFIG
cat >"$admission/admission-config.yaml" <<'ADMISSION'
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration: {apiVersion: apiserver.config.k8s.io/v1, kind: WebhookAdmissionConfiguration, kubeConfigFile: /etc/kubernetes/admission/kubeconfig.yaml}
- name: MutatingAdmissionWebhook
  configuration: {apiVersion: apiserver.config.k8s.io/v1, kind: WebhookAdmissionConfiguration, kubeConfigFile: /etc/kubernetes/admission/kubeconfig.yaml}
ADMISSION
cat >"$admission/kind.yaml" <<KIND
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
  extraMounts:
  - {hostPath: $admission, containerPath: /etc/kubernetes/admission, readOnly: true}
  kubeadmConfigPatches:
  - |
    apiVersion: kubeadm.k8s.io/v1beta4
    kind: ClusterConfiguration
    apiServer:
      extraArgs:
      - {name: admission-control-config-file, value: /etc/kubernetes/admission/admission-config.yaml}
      extraVolumes:
      - {name: admission, hostPath: /etc/kubernetes/admission, mountPath: /etc/kubernetes/admission, readOnly: true, pathType: Directory}
KIND
if ! kind get clusters | grep -qx "$cluster"; then
  kind create cluster --name "$cluster" --config "$admission/kind.yaml" --wait 120s
fi
kubeconfig="$(mktemp)"
trap 'rm -f "$kubeconfig"; [[ -n "${KEEP_CLUSTER:-}" ]] || kind delete cluster --name "$cluster"' EXIT
kind get kubeconfig --name "$cluster" >"$kubeconfig"
export KUBECONFIG="$kubeconfig"

docker build -t "$image" "$root"
kind load docker-image "$image" --name "$cluster"

kubectl apply --server-side -f "$root/test/e2e/crds/" -f "$root/test/e2e/fixtures/identities.yaml"
kubectl wait --for condition=Established crd --all --timeout 60s

# The shipped managed-agent overlay, with the e2e configuration and the image built here.
overlay="$(mktemp -d)"
cp "$root/test/e2e/fixtures/config.yaml" "$overlay/config.yaml"
sed -i 's/^  type: memory$/  type: secret/' "$overlay/config.yaml"
cat >"$overlay/kustomization.yaml" <<KUSTOMIZATION
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $root/manifests/overlays/managed-agent
configMapGenerator:
  - name: spec-guard-config
    behavior: replace
    files: [config.yaml]
images:
  - name: ghcr.io/spec-guard/spec-guard
    newName: spec-guard
    newTag: e2e
KUSTOMIZATION
kubectl kustomize "$overlay" | kubectl apply --server-side --field-manager=spec-guard-install -f -
kubectl -n spec-guard rollout status deployment/spec-guard --timeout 180s
kubectl wait --for=create mutatingwebhookconfiguration/spec-guard --timeout 60s

cd "$root"
npm ci --no-audit --no-fund
npm run build
SPEC_GUARD_E2E_KUBECONFIG="$kubeconfig" SPEC_GUARD_E2E_IN_CLUSTER=1 \
  npm exec -- node --experimental-vm-modules node_modules/jest/bin/jest.js --runInBand --selectProjects e2e
