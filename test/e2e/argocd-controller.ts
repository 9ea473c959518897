import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startProcess, type Daemon } from '../helpers/cli.js';
import { freePort, kubectlOk, state } from './harness.js';

/**
 * The real Argo CD application-controller (v3.2.11, built from the Go module proxy by
 * scripts/build-argocd-controller.sh in the global setup), run against the test apiserver as
 * its own service account, with redis-server beside it and no repo-server:
 * `operation.sync.manifests` needs none.
 */

export const CONTROLLER_USER = 'system:serviceaccount:argocd:argocd-application-controller';

/** A client certificate and kubeconfig for the controller's service account, signed by the local control plane's CA. */
function controllerKubeconfig(dir: string): string {
  const pki = join(dirname(state().adminKubeconfig), 'pki');
  const key = join(dir, 'controller.key');
  const csr = join(dir, 'controller.csr');
  const crt = join(dir, 'controller.crt');
  execFileSync('openssl', ['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', `/O=system:serviceaccounts/O=system:serviceaccounts:argocd/CN=${CONTROLLER_USER}`], { stdio: 'ignore' });
  const ext = join(dir, 'controller.ext');
  writeFileSync(ext, 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n');
  execFileSync('openssl', ['x509', '-req', '-in', csr, '-CA', join(pki, 'ca.crt'), '-CAkey', join(pki, 'ca.key'), '-CAcreateserial', '-days', '1', '-sha256', '-extfile', ext, '-out', crt], { stdio: 'ignore' });
  const admin = JSON.parse(kubectlOk([], ['config', 'view', '--raw', '-o', 'json']));
  const server = admin.clusters[0].cluster.server as string;
  const file = join(dir, 'controller.kubeconfig');
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster: { server, 'certificate-authority': join(pki, 'ca.crt') } }],
      users: [{ name: 'controller', user: { 'client-certificate': crt, 'client-key': key } }],
      contexts: [{ name: 'local', context: { cluster: 'local', user: 'controller', namespace: 'argocd' } }],
      'current-context': 'local',
    }),
  );
  return file;
}

/** What Argo CD's install gives the controller: every resource of the destination cluster, and its settings. */
function installArgoCdBasics(): void {
  const objects = [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'argocd-application-controller-e2e' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [{ kind: 'ServiceAccount', name: 'argocd-application-controller', namespace: 'argocd' }] },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-cm', namespace: 'argocd', labels: { 'app.kubernetes.io/part-of': 'argocd' } }, data: {} },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'argocd-secret', namespace: 'argocd', labels: { 'app.kubernetes.io/part-of': 'argocd' } }, stringData: { 'server.secretkey': 'e2e-only-secret-key' } },
  ];
  kubectlOk([], ['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: objects.map((o) => JSON.stringify(o)).join('\n') });
}

export interface ArgoCdController {
  controller: Daemon;
  redis: Daemon;
  stop(): Promise<void>;
}

export async function startArgoCdController(): Promise<ArgoCdController> {
  const binary = process.env.SPEC_GUARD_ARGOCD_CONTROLLER;
  if (!binary) throw new Error('SPEC_GUARD_ARGOCD_CONTROLLER is not set: the e2e global setup builds the controller');
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-argocd-'));
  installArgoCdBasics();
  const redisPort = await freePort();
  const redis = startProcess('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]);
  await redis.waitForLog(/Ready to accept connections/, 15_000);
  const kubeconfig = controllerKubeconfig(dir);
  const metricsPort = await freePort();
  const controller = startProcess(
    binary,
    ['--redis', `127.0.0.1:${redisPort}`, '--repo-server', '127.0.0.1:1', '--namespace', 'argocd', '--app-resync', '10', '--metrics-port', String(metricsPort), '--operation-processors', '2', '--status-processors', '2'],
    { ARGOCD_FAKE_IN_CLUSTER: 'true', KUBECONFIG: kubeconfig, HOME: dir },
  );
  await controller.waitForLog(/Configmap\/secret informer synced/, 90_000);
  return {
    controller,
    redis,
    async stop() {
      await controller.stop();
      await redis.stop();
    },
  };
}
