# shellcheck shell=bash
# The Kubernetes and etcd versions the local control plane builds and the suite runs on.
# The default is the minimum spec-guard supports; the compatibility test runs the core
# scenarios on the newest too.
KUBE_VERSION_DEFAULT=v1.34.4
KUBE_VERSION_NEWEST=v1.36.3
ETCD_VERSION_DEFAULT=v3.6.16
export KUBE_VERSION_DEFAULT KUBE_VERSION_NEWEST ETCD_VERSION_DEFAULT
