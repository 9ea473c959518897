#!/usr/bin/env bash
# A local Kubernetes control plane (real kube-apiserver + etcd) on 127.0.0.1.
#   scripts/control-plane.sh up     build if needed, start, wait for /readyz, print the kubeconfig path
#   scripts/control-plane.sh env    print `export KUBECONFIG=…`
#   scripts/control-plane.sh down   stop both and remove their state
#   scripts/control-plane.sh restart-apiserver   a new kube-apiserver on the same etcd (benches)
# Environment: CP_NAME (state folder name, default "default"), CP_APISERVER_PORT (default 16443),
# CP_ETCD_PORT (default 12379; the peer port is the next one), SPEC_GUARD_CACHE (build cache),
# CP_CONTROLLERS (kube-controller-manager's --controllers, e.g. garbagecollector; default: no
# controller manager), CP_INSTALL (managed-agent: spec-guard's namespace and RBAC as the
# overlay ships them, the default; none: nothing of spec-guard's, for the uninstall tests).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SPEC_GUARD_CACHE:-$root/.cache}"
name="${CP_NAME:-default}"
state="$cache/control-plane/$name"
api_port="${CP_APISERVER_PORT:-16443}"
etcd_port="${CP_ETCD_PORT:-12379}"
controllers="${CP_CONTROLLERS:-}"
install="${CP_INSTALL:-managed-agent}"
kubeconfig="$state/admin.kubeconfig"

log() { printf '[control-plane:%s] %s\n' "$name" "$*" >&2; }
die() { log "error: $*"; exit 1; }

running() { [[ -f "$state/$1.pid" ]] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }

# issue_cert NAME SUBJECT [SAN]: a key and a certificate signed by the local CA.
issue_cert() {
  local cn="$1" subj="$2" san="${3:-}"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$state/pki/$cn.key" -subj "$subj" -out "$state/pki/$cn.csr" 2>/dev/null
  local ext="$state/pki/$cn.ext"
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=digitalSignature,keyEncipherment"
    if [[ -n "$san" ]]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"
    else echo "extendedKeyUsage=clientAuth"; fi; } >"$ext"
  openssl x509 -req -in "$state/pki/$cn.csr" -CA "$state/pki/ca.crt" -CAkey "$state/pki/ca.key" \
    -CAcreateserial -days 30 -sha256 -extfile "$ext" -out "$state/pki/$cn.crt" 2>/dev/null
}

write_kubeconfig() {
  local user="$1" out="$2"
  cat >"$out" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $state/pki/ca.crt
users:
- name: $user
  user:
    client-certificate: $state/pki/$user.crt
    client-key: $state/pki/$user.key
contexts:
- name: local
  context: {cluster: local, user: $user}
current-context: local
KC
}

make_pki() {
  mkdir -p "$state/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -keyout "$state/pki/ca.key" -out "$state/pki/ca.crt" \
    -subj "/CN=spec-guard-local-ca" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  issue_cert apiserver "/CN=kube-apiserver" "IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc"
  issue_cert admin "/O=system:masters/CN=admin"
  # spec-guard's own identity: the username of its service account, so RBAC and trust
  # see exactly what they would see in a cluster.
  issue_cert spec-guard "/O=system:serviceaccounts/O=system:serviceaccounts:spec-guard/CN=system:serviceaccount:spec-guard:spec-guard"
  # The apiserver's front-proxy client certificate, which it also presents to webhooks: what
  # spec-guard --client-ca-from-cluster verifies, from what the apiserver publishes
  # (kube-system/extension-apiserver-authentication), as on kubeadm and kind clusters.
  issue_cert front-proxy-client "/CN=front-proxy-client"
  openssl genrsa -out "$state/pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$state/pki/sa.key" -pubout -out "$state/pki/sa.pub" 2>/dev/null
  write_kubeconfig admin "$kubeconfig"
  write_kubeconfig spec-guard "$state/spec-guard.kubeconfig"
}

# The apiserver presents its front-proxy client certificate to every webhook ('*').
write_admission_config() {
  cat >"$state/admission-kubeconfig.yaml" <<KC
apiVersion: v1
kind: Config
users:
- name: '*'
  user:
    client-certificate: $state/pki/front-proxy-client.crt
    client-key: $state/pki/front-proxy-client.key
KC
  local plugin
  {
    echo "apiVersion: apiserver.config.k8s.io/v1"
    echo "kind: AdmissionConfiguration"
    echo "plugins:"
    for plugin in ValidatingAdmissionWebhook MutatingAdmissionWebhook; do
      echo "- name: $plugin"
      echo "  configuration:"
      echo "    apiVersion: apiserver.config.k8s.io/v1"
      echo "    kind: WebhookAdmissionConfiguration"
      echo "    kubeConfigFile: $state/admission-kubeconfig.yaml"
    done
  } >"$state/admission-config.yaml"
}

wait_ready() {
  local deadline=$((SECONDS + 90))
  until curl -fsS --max-time 2 --cacert "$state/pki/ca.crt" --cert "$state/pki/admin.crt" --key "$state/pki/admin.key" \
      "https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1; do
    # A failed start leaves nothing running (etcd included): the next `up` starts clean.
    running apiserver || { stop etcd; die "kube-apiserver exited; see $state/apiserver.log: $(tail -n 3 "$state/apiserver.log")"; }
    (( SECONDS < deadline )) || { stop apiserver; stop etcd; die "kube-apiserver not ready after 90 s; see $state/apiserver.log"; }
    sleep 0.5
  done
}

# start_apiserver BINARY: kube-apiserver on the state folder's PKI and etcd, its pid recorded.
start_apiserver() {
  local apiserver_bin="$1"
  log "starting kube-apiserver on 127.0.0.1:$api_port"
  setsid "$apiserver_bin" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$state/pki/apiserver.crt" --tls-private-key-file "$state/pki/apiserver.key" \
    --client-ca-file "$state/pki/ca.crt" --cert-dir "$state/pki" \
    --requestheader-client-ca-file "$state/pki/ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$state/pki/front-proxy-client.crt" --proxy-client-key-file "$state/pki/front-proxy-client.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$state/pki/sa.pub" --service-account-signing-key-file "$state/pki/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 --authorization-mode RBAC --allow-privileged=true \
    --enable-admission-plugins MutatingAdmissionWebhook,ValidatingAdmissionWebhook \
    --admission-control-config-file "$state/admission-config.yaml" \
    --disable-admission-plugins ServiceAccount \
    >"$state/apiserver.log" 2>&1 < /dev/null &
  echo $! >"$state/apiserver.pid"
}

up() {
  if running apiserver && running etcd && { [[ -z "$controllers" ]] || running controller-manager; }; then
    log "already running on 127.0.0.1:$api_port; reusing it"
    echo "$kubeconfig"; return 0
  fi
  [[ -d "$state" ]] && down_quiet
  local built apiserver_bin etcd_bin controller_manager_bin
  built="$(SPEC_GUARD_BUILD_CONTROLLER_MANAGER="$controllers" "$root/scripts/build-control-plane.sh")"
  apiserver_bin="$(sed -n 1p <<<"$built")"
  etcd_bin="$(sed -n 2p <<<"$built")"
  controller_manager_bin="$(sed -n 3p <<<"$built")"
  mkdir -p "$state/etcd"
  make_pki
  write_admission_config
  log "starting etcd on 127.0.0.1:$etcd_port"
  setsid "$etcd_bin" --name "$name" --data-dir "$state/etcd" --unsafe-no-fsync \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-cluster "$name=http://127.0.0.1:$((etcd_port + 1))" --listen-metrics-urls "" \
    >"$state/etcd.log" 2>&1 < /dev/null &
  echo $! >"$state/etcd.pid"
  start_apiserver "$apiserver_bin"
  wait_ready
  if [[ -n "$controllers" ]]; then
    log "starting kube-controller-manager (--controllers $controllers)"
    setsid "$controller_manager_bin" --kubeconfig "$kubeconfig" --controllers "$controllers" \
      --leader-elect=false --secure-port 0 --use-service-account-credentials=false \
      >"$state/controller-manager.log" 2>&1 < /dev/null &
    echo $! >"$state/controller-manager.pid"
  fi
  KUBECONFIG="$kubeconfig" kubectl apply --server-side -f "$root/test/e2e/crds/" -f "$root/test/e2e/fixtures/identities.yaml" >&2
  # A CRD created a moment ago may have no status yet, which makes `kubectl wait` fail at once.
  local established=""
  for _ in $(seq 60); do
    if KUBECONFIG="$kubeconfig" kubectl wait --for condition=Established crd --all --timeout 30s >&2 2>/dev/null; then established=1; break; fi
    sleep 0.5
  done
  [[ -n "$established" ]] || die "the CRDs did not become Established"

  if [[ "$install" == managed-agent ]]; then
    # spec-guard's namespace, service account and least-privilege RBAC, as shipped. (With no
    # scheduler or nodes here, its Deployment stays without pods: spec-guard runs locally.)
    KUBECONFIG="$kubeconfig" kubectl kustomize "$root/manifests/overlays/managed-agent" \
      | KUBECONFIG="$kubeconfig" kubectl apply --server-side --field-manager=spec-guard-install -f - >&2
    # The e2e configuration guards two namespaces more (rewrite and warn mode): its RBAC, as
    # `spec-guard manifests --rbac` renders it.
    KUBECONFIG="$kubeconfig" kubectl apply --server-side --field-manager=spec-guard-install -f "$root/test/e2e/fixtures/rbac.yaml" >&2
  fi
  log "ready: export KUBECONFIG=$kubeconfig"
  echo "$kubeconfig"
}

# A new kube-apiserver process on the same etcd and PKI: what it holds in memory (its watch
# cache, a heap grown by earlier lists) is gone, the stored objects are not.
restart_apiserver() {
  { running apiserver && running etcd; } || die "not running; run: $0 up"
  local apiserver_bin; apiserver_bin="$(sed -n 1p <<<"$("$root/scripts/build-control-plane.sh")")"
  stop apiserver
  start_apiserver "$apiserver_bin"
  wait_ready
  log "kube-apiserver restarted on 127.0.0.1:$api_port"
}

stop() {
  local pidfile="$state/$1.pid"
  [[ -f "$pidfile" ]] || return 0
  local pid; pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

down_quiet() { stop controller-manager; stop apiserver; stop etcd; rm -rf "$state"; }

case "${1:-}" in
  up) up ;;
  env) [[ -f "$kubeconfig" ]] || die "not running; run: $0 up"; echo "export KUBECONFIG=$kubeconfig" ;;
  down) down_quiet; log "stopped and removed" ;;
  restart-apiserver) restart_apiserver ;;
  *) echo "usage: $0 up|down|env|restart-apiserver" >&2; exit 2 ;;
esac
