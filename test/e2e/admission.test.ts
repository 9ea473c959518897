import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { STAMP_ANNOTATION } from '../../src/guard/index.js';
import { runCli } from '../helpers/cli.js';
import {
  AGENT,
  ALICE,
  CONTROLLER,
  POLICY_DENIED,
  agentApply,
  application,
  fixture,
  getJson,
  kubectl,
  kubectlOk,
  policyInForce,
  layerIntact,
  startSpecGuard,
  state,
  targetRevision,
  unregister,
  type SpecGuard,
} from './harness.js';

jest.setTimeout(60_000);

let specGuard: SpecGuard;

beforeAll(async () => {
  unregister();
  specGuard = await startSpecGuard(fixture('config.yaml'));
  await policyInForce();
  // The controller's .operation writes change a guarded door: until the guard layer's period
  // begins (a few seconds after registration) the watcher cannot attribute them, and reverts.
  await layerIntact(specGuard, 'guard');
});

afterAll(async () => {
  await specGuard?.stop();
  unregister();
  kubectl([], ['delete', 'applications', '--all', '-n', 'argocd', '--wait=false']);
  kubectl([], ['delete', 'applications', '--all', '-n', 'apps-rewrite', '--wait=false']);
  kubectl([], ['delete', 'applications', '--all', '-n', 'apps-warn', '--wait=false']);
});

describe('admission through the real kube-apiserver', () => {
  it('1. the agent creates and updates an Application: allowed and stamped', () => {
    agentApply('adm-one', 'argocd');
    const created = getJson(['application', '-n', 'argocd', 'adm-one']);
    const firstStamp = created.metadata.annotations[STAMP_ANNOTATION] as string;
    expect(firstStamp).toMatch(/^v2\.[0-9a-f]{64}\.\d+\./);
    agentApply('adm-one', 'argocd', { source: { repoURL: 'https://example.com/repo.git', targetRevision: 'v2', path: 'app' } });
    const updated = getJson(['application', '-n', 'argocd', 'adm-one']);
    expect(updated.spec.source.targetRevision).toBe('v2');
    expect(updated.metadata.annotations[STAMP_ANNOTATION]).toMatch(/^v2\./);
    expect(updated.metadata.annotations[STAMP_ANNOTATION]).not.toBe(firstStamp);
  });

  it("2. alice's kubectl edit of the spec is refused inside the apiserver by spec-guard's policy, naming what changed; the spec is unchanged", () => {
    agentApply('adm-edit', 'argocd');
    const result = kubectl(ALICE, ['edit', 'application', '-n', 'argocd', 'adm-edit'], {
      env: { KUBE_EDITOR: fixture('edit-target-revision.sh'), TARGET_REVISION: 'evil' },
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(POLICY_DENIED);
    expect(result.stderr).toContain('Application argocd/adm-edit');
    expect(result.stderr).toContain('this write changes /spec/source.');
    expect(result.stderr).toContain('source-of-truth cluster');
    expect(targetRevision('adm-edit', 'argocd')).toBe('HEAD');
  });

  it("3. rewrite namespace: alice's kubectl patch succeeds with a warning; the stored spec is the agent's", () => {
    agentApply('adm-rewrite', 'apps-rewrite');
    const result = kubectl(ALICE, ['patch', 'application', '-n', 'apps-rewrite', 'adm-rewrite', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/Warning: spec-guard: .*your change to \/spec\/source\/targetRevision was undone/);
    expect(targetRevision('adm-rewrite', 'apps-rewrite')).toBe('HEAD');
  });

  it('4. warn namespace: the change is stored and kubectl prints the warning', () => {
    agentApply('adm-warn', 'apps-warn');
    const result = kubectl(ALICE, ['patch', 'application', '-n', 'apps-warn', 'adm-warn', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"tolerated"}}}']);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/Warning: spec-guard: .*changed \/spec\/source\/targetRevision will not stick/);
    expect(targetRevision('adm-warn', 'apps-warn')).toBe('tolerated');
  });

  it("5. the application-controller's status, .operation and normalizing writes, and alice's labels and annotations, are admitted", () => {
    agentApply('adm-controller', 'argocd', { project: '', syncPolicy: {}, source: { repoURL: 'https://example.com/r.git', targetRevision: 'HEAD', path: 'p', helm: {} } });
    const patch = (identity: string[], body: object) =>
      kubectl(identity, ['patch', 'application', '-n', 'argocd', 'adm-controller', '--type=merge', '-p', JSON.stringify(body)]);
    expect(patch(CONTROLLER, { status: { sync: { status: 'Synced' }, health: { status: 'Healthy' } } }).code).toBe(0);
    expect(patch(CONTROLLER, { operation: { sync: { revision: 'HEAD' }, initiatedBy: { automated: true } } }).code).toBe(0);
    const normalizing = patch(CONTROLLER, { spec: { project: 'default', syncPolicy: null, source: { helm: null } } });
    expect(normalizing.stderr).toBe('');
    expect(normalizing.code).toBe(0);
    expect(kubectl(ALICE, ['label', 'application', '-n', 'argocd', 'adm-controller', 'team=payments']).code).toBe(0);
    expect(kubectl(ALICE, ['annotate', 'application', '-n', 'argocd', 'adm-controller', 'note=hello']).code).toBe(0);
    const stored = getJson(['application', '-n', 'argocd', 'adm-controller']);
    expect(stored.status.sync.status).toBe('Synced');
    expect(stored.operation.sync.revision).toBe('HEAD');
    expect(stored.spec.project).toBe('default');
    expect(stored.metadata.labels.team).toBe('payments');
    expect(stored.metadata.annotations.note).toBe('hello');
    // A real change hidden in a normalizing write is still refused.
    const hidden = patch(CONTROLLER, { spec: { project: 'default', destination: { namespace: 'prod' } } });
    expect(hidden.code).not.toBe(0);
    expect(hidden.stderr).toContain('/spec/destination/namespace');
  });

  it("6. alice's delete and create are refused; the agent's succeed", () => {
    agentApply('adm-delete', 'argocd');
    const del = kubectl(ALICE, ['delete', 'application', '-n', 'argocd', 'adm-delete']);
    expect(del.code).not.toBe(0);
    expect(del.stderr).toContain('deleting Application argocd/adm-delete is reserved for the source of truth');
    const create = kubectl(ALICE, ['create', '-f', '-'], { input: application('adm-alice-new', 'argocd') });
    expect(create.code).not.toBe(0);
    expect(create.stderr).toContain('creating Application argocd/adm-alice-new is reserved for the source of truth');
    expect(kubectl([], ['get', 'application', '-n', 'argocd', 'adm-alice-new']).code).not.toBe(0);
    kubectlOk(AGENT, ['create', '-f', '-'], { input: application('adm-agent-new', 'argocd') });
    kubectlOk(AGENT, ['delete', 'application', '-n', 'argocd', 'adm-delete']);
    expect(kubectl([], ['get', 'application', '-n', 'argocd', 'adm-delete']).code).not.toBe(0);
  });

  it('7. kubectl apply --dry-run=server by alice gets the same answer and changes nothing', () => {
    agentApply('adm-dry', 'argocd');
    const before = getJson(['application', '-n', 'argocd', 'adm-dry']);
    const changed = application('adm-dry', 'argocd', { source: { repoURL: 'https://evil.example/r.git', targetRevision: 'evil', path: 'p' } });
    const dry = kubectl(ALICE, ['apply', '--server-side', '--dry-run=server', '-f', '-'], { input: changed });
    const real = kubectl(ALICE, ['apply', '--server-side', '-f', '-'], { input: changed });
    expect(dry.code).not.toBe(0);
    expect(real.code).not.toBe(0);
    const message = (s: string) => s.slice(s.indexOf('spec-guard:'));
    expect(message(dry.stderr)).toBe(message(real.stderr));
    const after = getJson(['application', '-n', 'argocd', 'adm-dry']);
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it('8. the agent creates by generateName, as field manager foo (as the real one creates): named and stamped at once, known canonical', () => {
    const created = kubectlOk(AGENT, ['create', '--field-manager=foo', '-o', 'name', '-f', '-'], {
      input: application('', 'argocd').replace('"name":""', '"generateName":"adm-gen-"'),
    }).trim();
    const name = created.replace('application.argoproj.io/', '');
    expect(name).toMatch(/^adm-gen-[a-z0-9]{5}$/);
    expect(getJson(['application', '-n', 'argocd', name]).metadata.annotations[STAMP_ANNOTATION]).toMatch(/^v2\./);
    const status = runCli(['status', '--config', fixture('config.yaml'), '--kubeconfig', state().adminKubeconfig]);
    expect(status.stdout).toMatch(new RegExp(`applications\\.argoproj\\.io argocd/${name}\\s+in sync`));
  });
});
