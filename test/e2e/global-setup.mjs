// Brings up the local control plane (real kube-apiserver + etcd) once for the e2e suite, or
// uses an existing cluster when SPEC_GUARD_E2E_KUBECONFIG names its kubeconfig. What the
// tests need is passed on in the environment, which jest's workers inherit.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default async function globalSetup() {
  // Helm v4, built from the Go module proxy like the apiserver (the chart's tests).
  const buildHelm = fileURLToPath(new URL('../../scripts/build-helm.sh', import.meta.url));
  process.env.SPEC_GUARD_HELM ??= execFileSync('bash', [buildHelm], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  // Argo CD's application-controller v3.2.11, likewise (the side doors against the real consumer).
  const buildArgoCd = fileURLToPath(new URL('../../scripts/build-argocd-controller.sh', import.meta.url));
  process.env.SPEC_GUARD_ARGOCD_CONTROLLER ??= execFileSync('bash', [buildArgoCd], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const existing = process.env.SPEC_GUARD_E2E_KUBECONFIG;
  if (existing) {
    process.env.SPEC_GUARD_E2E_SELF_KUBECONFIG ??= existing;
    return;
  }
  const script = fileURLToPath(new URL('../../scripts/control-plane.sh', import.meta.url));
  const env = { ...process.env, CP_NAME: 'e2e', CP_APISERVER_PORT: process.env.CP_APISERVER_PORT ?? '26443', CP_ETCD_PORT: process.env.CP_ETCD_PORT ?? '22379' };
  const kubeconfig = execFileSync('bash', [script, 'up'], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  process.env.SPEC_GUARD_E2E_KUBECONFIG = kubeconfig;
  process.env.SPEC_GUARD_E2E_SELF_KUBECONFIG = kubeconfig.replace(/admin\.kubeconfig$/, 'spec-guard.kubeconfig');
  process.env.SPEC_GUARD_E2E_OWNED = '1';
}
