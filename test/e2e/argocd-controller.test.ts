import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { AGENT, ALICE, fixture, inCluster, kubectl, kubectlOk, policyInForce, readApplication, startSpecGuard, unregister, waitFor, type SpecGuard } from './harness.js';
import { startArgoCdController, type ArgoCdController } from './argocd-controller.js';

// The side doors against the real consumer: Argo CD's application-controller (v3.2.11) beside
// spec-guard with the e2e configuration (the Argo CD profile in argocd). It applies
// `operation.sync.manifests` to the in-cluster destination with no repo-server involved: the
// agent's manifests are deployed and its operation consumed; alice's never are.
jest.setTimeout(240_000);

const NS = 'argocd';
const PROJECT = 'doors-e2e';
const describeLocal = inCluster ? describe.skip : describe;

const configMap = (name: string, owner: string) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { owner } });

function agentApplication(name: string, operation?: object): string {
  return JSON.stringify({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: NS, finalizers: ['resources-finalizer.argocd.argoproj.io'] },
    spec: {
      project: PROJECT,
      source: { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: 'HEAD', path: 'guestbook' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'default' },
    },
    ...(operation ? { operation } : {}),
  });
}

const agentApply = (body: string) => kubectlOk(AGENT, ['apply', '--server-side', '--field-manager=argocd-agent', '--force-conflicts', '-f', '-'], { input: body });
const configMapExists = (name: string) => kubectl([], ['get', 'configmap', '-n', 'default', name]).code === 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeLocal('the side doors beside the real Argo CD application-controller', () => {
  let sg: SpecGuard | undefined;
  let argocd: ArgoCdController | undefined;

  beforeAll(async () => {
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    // A clean namespace: the controller reconciles every Application in it.
    kubectl([], ['patch', 'applications', '-n', NS, '--all', '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    kubectl([], ['delete', 'applications', '-n', NS, '--all', '--wait=true', '--timeout=30s']);
    sg = await startSpecGuard(fixture('config.yaml'));
    await policyInForce();
    agentApply(
      JSON.stringify({
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'AppProject',
        metadata: { name: PROJECT, namespace: NS },
        spec: { sourceRepos: ['*'], destinations: [{ server: '*', namespace: '*' }], clusterResourceWhitelist: [{ group: '*', kind: '*' }] },
      }),
    );
    argocd = await startArgoCdController();
  });

  afterAll(async () => {
    await argocd?.stop();
    await sg?.stop();
    unregister();
    kubectl([], ['patch', 'applications', '-n', NS, '--all', '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    kubectl([], ['delete', 'applications', '-n', NS, '--all', '--wait=false']);
    kubectl([], ['delete', 'appproject', '-n', NS, PROJECT, '--ignore-not-found', '--wait=false']);
    kubectl([], ['delete', 'configmap', '-n', 'default', 'agents', 'hers', 'hers-resumed', '--ignore-not-found']);
  });

  it('1. the agent’s operation is carried out and cleared by the controller, its status written: no denial', async () => {
    agentApply(agentApplication('doors-real', { initiatedBy: { username: 'principal' }, sync: { manifests: [configMap('agents', 'agent')] } }));
    await waitFor('the agent’s manifests deployed', () => configMapExists('agents'), 60_000, 250);
    await waitFor(
      'the operation consumed and its state written',
      async () => {
        const app = await readApplication(NS, 'doors-real');
        return app && !app.operation && app.status?.operationState?.phase === 'Succeeded';
      },
      60_000,
      250,
    );
    // spec-guard refused none of the controller's writes (its status, its operation state, the clear).
    expect(argocd!.controller.logs()).not.toMatch(/denied the request|ValidatingAdmissionPolicy 'spec-guard'/);
    expect(sg!.logs().split('\n').filter((l) => l.includes('"decision":"deny"') && l.includes('argocd-application-controller'))).toEqual([]);
  });

  it('2. alice’s manifests through .operation are refused and never deployed', async () => {
    const r = kubectl(ALICE, ['patch', 'application', '-n', NS, 'doors-real', '--type=merge', '-p', JSON.stringify({ operation: { sync: { manifests: [configMap('hers', 'alice')] } } })]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('/operation of Application argocd/doors-real is owned by the source of truth');
    await sleep(5000);
    expect(configMapExists('hers')).toBe(false);
  });

  it('3. alice’s in-progress operationState is refused: the agent’s next sync deploys the agent’s manifests, not hers', async () => {
    const forged = { operationState: { phase: 'Running', startedAt: new Date().toISOString(), operation: { sync: { manifests: [configMap('hers-resumed', 'alice')] } } } };
    const r = kubectl(ALICE, ['patch', 'application', '-n', NS, 'doors-real', '--type=merge', '-p', JSON.stringify({ status: forged })]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('/status of Application argocd/doors-real is written only by the source of truth and');
    kubectlOk([], ['delete', 'configmap', '-n', 'default', 'agents']);
    agentApply(agentApplication('doors-real', { initiatedBy: { username: 'principal' }, sync: { manifests: [configMap('agents', 'agent-again')] } }));
    await waitFor('the agent’s manifests deployed again', () => configMapExists('agents'), 60_000, 250);
    expect(configMapExists('hers-resumed')).toBe(false);
  });

  it('4. skip-reconcile and the finalizer stay the source of truth’s; the agent’s delete cascades and the controller removes its finalizer', async () => {
    expect(kubectl(ALICE, ['annotate', 'application', '-n', NS, 'doors-real', 'argocd.argoproj.io/skip-reconcile=true']).code).not.toBe(0);
    expect(kubectl(ALICE, ['patch', 'application', '-n', NS, 'doors-real', '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers/0"}]']).code).not.toBe(0);
    kubectlOk(AGENT, ['delete', 'application', '-n', NS, 'doors-real', '--wait=false']);
    // The resources finalizer cascades: the controller deletes what it tracks (objects applied
    // from operation.sync.manifests carry no tracking annotation in v3.2.11: none here), removes
    // its finalizer through spec-guard, and the Application goes.
    await waitFor('the cascade: the Application gone', async () => (await readApplication(NS, 'doors-real')) === undefined, 60_000, 250);
    expect(argocd!.controller.logs()).toMatch(/Deleting application's resources/);
  });
});
