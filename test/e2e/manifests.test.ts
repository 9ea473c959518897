import { mkdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../helpers/cli.js';
import { inCluster, kubectl, kubectlOk } from './harness.js';

const SELF = '--as=system:serviceaccount:spec-guard:spec-guard';
const overlays = ['managed-agent', 'principal-autonomous'];

describe('manifests/', () => {
  it.each(overlays)('the %s overlay renders and the real apiserver accepts it (server-side apply)', (overlay) => {
    const rendered = kubectlOk([], ['kustomize', `manifests/overlays/${overlay}`]);
    for (const kind of ['Namespace', 'ServiceAccount', 'ClusterRole', 'Role', 'ConfigMap', 'Deployment', 'Service', 'PodDisruptionBudget', 'NetworkPolicy']) {
      expect(rendered).toContain(`kind: ${kind}\n`);
    }
    // managed-agent is what the control plane installed for real; applying it again is a no-op.
    // principal-autonomous would replace spec-guard's RBAC under the running suite: dry run.
    // On kind the installed overlay carries the image built there: dry runs only.
    const dryRun = overlay === 'managed-agent' && !inCluster ? [] : ['--dry-run=server'];
    const applied = kubectl([], ['apply', '--server-side', '--field-manager=spec-guard-install', ...dryRun, '-f', '-'], { input: rendered });
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain('deployment.apps/spec-guard serverside-applied');
  });

  it('the cert-manager component: a CA Issuer and the serving Certificate for the Service; spec-guard serves the Secret and publishes its CA', () => {
    const dir = '.cache/kustomize/cert-manager';
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/kustomization.yaml`, 'resources: [../../../manifests/overlays/managed-agent]\ncomponents: [../../../manifests/components/cert-manager]\n');
    const objects = parseAllDocuments(kubectlOk([], ['kustomize', dir])).map((d) => d.toJS() as Record<string, any>);
    const serving = objects.find((o) => o.kind === 'Certificate' && o.metadata.name === 'spec-guard-serving')!;
    expect(serving.spec.dnsNames).toContain('spec-guard.spec-guard.svc');
    expect(serving.spec.issuerRef).toEqual({ name: 'spec-guard-ca', kind: 'Issuer' });
    const pod = objects.find((o) => o.kind === 'Deployment')!.spec.template.spec;
    expect(pod.containers[0].args).toEqual(expect.arrayContaining(['--tls-cert-file=/etc/spec-guard/tls/tls.crt', '--tls-key-file=/etc/spec-guard/tls/tls.key', '--tls-ca-file=/etc/spec-guard/tls/ca.crt']));
    expect(pod.volumes).toContainEqual({ name: 'tls', secret: { secretName: serving.spec.secretName } });
    // The flags are ones serve takes, in this form.
    expect(runCli(['serve', '--tls-cert-file=/nonexistent/tls.crt', '--tls-ca-file=/nonexistent/ca.crt', '--config', 'manifests/overlays/managed-agent/config.yaml', '--standalone']).stderr).toContain('--tls-cert-file: goes with --tls-key-file');
  });

  it('hardens the pod as the issue asks', () => {
    const deployment = kubectlOk([], ['get', 'deployment', '-n', 'spec-guard', 'spec-guard', '-o', 'json']);
    const spec = JSON.parse(deployment).spec;
    const pod = spec.template.spec;
    const container = pod.containers[0];
    expect(spec.replicas).toBe(2);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.resources.limits.memory).toBeDefined();
    expect(pod.affinity.podAntiAffinity).toBeDefined();
  });

  const can = (verb: string, resource: string, ns?: string) =>
    kubectl([], ['auth', 'can-i', SELF, verb, resource, ...(ns ? ['-n', ns] : [])]).stdout.trim();

  it.each([
    ['patch', 'applications.argoproj.io', 'argocd'],
    ['create', 'applications.argoproj.io', 'argocd'],
    ['watch', 'applications.argoproj.io', 'apps-warn'],
    ['patch', 'appprojects.argoproj.io', 'argocd'],
    ['get', 'secrets', 'spec-guard'],
    ['create', 'secrets', 'spec-guard'],
    ['update', 'leases.coordination.k8s.io', 'spec-guard'],
    ['update', 'mutatingwebhookconfigurations/spec-guard', undefined],
    ['update', 'validatingwebhookconfigurations/spec-guard', undefined],
    ['create', 'events', 'argocd'],
    ['patch', 'secrets', 'argocd'],
  ])('RBAC lets spec-guard %s %s (in %s)', (verb, resource, ns) => {
    expect(can(verb, resource, ns)).toBe('yes');
  });

  it.each([
    ['get', 'secrets', 'kube-system'],
    ['list', 'secrets', 'default'],
    ['delete', 'applications.argoproj.io', 'argocd'],
    ['update', 'applications.argoproj.io', 'argocd'],
    ['update', 'mutatingwebhookconfigurations/someone-else', undefined],
    ['delete', 'validatingwebhookconfigurations/spec-guard', undefined],
    ['create', 'pods', 'spec-guard'],
    ['patch', 'deployments.apps', 'spec-guard'],
    ['delete', 'leases.coordination.k8s.io', 'kube-system'],
  ])('RBAC refuses spec-guard %s %s (in %s)', (verb, resource, ns) => {
    expect(can(verb, resource, ns)).toBe('no');
  });

  it('refuses cluster-wide Secret reads', () => {
    expect(kubectl([], ['auth', 'can-i', SELF, 'list', 'secrets', '--all-namespaces']).stdout.trim()).toBe('no');
  });
});
