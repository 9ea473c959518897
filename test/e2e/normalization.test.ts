import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { ALICE, CONTROLLER, agentApply, fixture, getJson, kubectl, policyInForce, startSpecGuard, unregister, type SpecGuard } from './harness.js';

// Issue #17, item 1, against the real apiserver: the Argo CD application-controller (v3.5.1)
// writes JSON merge patches as field manager argocd-application-controller. Every write it
// makes to normalize a spec is admitted; every change that changes what Argo CD does is
// refused, whether the controller or alice writes it.
jest.setTimeout(120_000);

const NS = 'argocd';
const repo = { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: 'HEAD', path: 'guestbook' };

let sg: SpecGuard;
beforeAll(async () => {
  unregister();
  kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
  sg = await startSpecGuard(fixture('config.yaml'));
  await policyInForce();
});
afterAll(async () => {
  await sg?.stop();
  unregister();
  kubectl([], ['delete', 'applications', '-n', NS, '-l', 'e2e=normalization', '--wait=false']);
});

let n = 0;
/** A fresh Application with `spec` (merged over the defaults), written by the agent. */
function appWith(spec: Record<string, unknown>): string {
  const name = `norm-${n++}`;
  agentApply(name, NS, spec);
  kubectl([], ['label', 'application', '-n', NS, name, 'e2e=normalization']);
  return name;
}

const mergePatch = (identity: string[], name: string, patch: object) =>
  kubectl(identity, ['patch', 'application', '-n', NS, name, '--field-manager=argocd-application-controller', '--type=merge', '-p', JSON.stringify(patch)]);

describe('the application-controller’s normalizing writes', () => {
  const normalizing: Array<[string, Record<string, unknown>, object]> = [
    ['project "" → default', { project: '' }, { spec: { project: 'default' } }],
    ['syncPolicy {} → null', { syncPolicy: {} }, { spec: { syncPolicy: null } }],
    ['source.helm {} → null', { source: { ...repo, helm: {} } }, { spec: { source: { helm: null } } }],
    ['source.kustomize {} → null', { source: { ...repo, kustomize: {} } }, { spec: { source: { kustomize: null } } }],
    ['source.directory {} → null', { source: { ...repo, directory: {} } }, { spec: { source: { directory: null } } }],
    ['source.directory {recurse: false} → null', { source: { ...repo, directory: { recurse: false } } }, { spec: { source: { directory: null } } }],
    ['source.kustomize {forceCommonLabels: true} → null (Argo CD’s zero test ignores it)', { source: { ...repo, kustomize: { forceCommonLabels: true } } }, { spec: { source: { kustomize: null } } }],
  ];
  it.each(normalizing)('admitted: %s', (_what, start, patch) => {
    const name = appWith(start);
    const result = mergePatch(CONTROLLER, name, patch);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('changes of what Argo CD does, refused from the controller and from alice', () => {
  const changing: Array<[string, Record<string, unknown>, object]> = [
    ['automated {} added (auto-sync on)', {}, { spec: { syncPolicy: { automated: {} } } }],
    ['retry {} added', {}, { spec: { syncPolicy: { retry: {} } } }],
    ['automated {enabled: false} → {} (auto-sync on)', { syncPolicy: { automated: { enabled: false } } }, { spec: { syncPolicy: { automated: { enabled: null } } } }],
    ['automated {} removed (auto-sync off)', { syncPolicy: { automated: {} } }, { spec: { syncPolicy: null } }],
    ['automated {prune: false, selfHeal: false} removed', { syncPolicy: { automated: { prune: false, selfHeal: false } } }, { spec: { syncPolicy: null } }],
    ['helm.valuesObject {} dropped', { source: { ...repo, helm: { valuesObject: {} } } }, { spec: { source: { helm: null } } }],
  ];
  it.each(changing)('refused: %s', (_what, start, patch) => {
    const name = appWith(start);
    const before = JSON.stringify(getJson(['application', '-n', NS, name]).spec);
    for (const identity of [CONTROLLER, ALICE]) {
      const result = mergePatch(identity, name, patch);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/spec-guard/);
    }
    expect(JSON.stringify(getJson(['application', '-n', NS, name]).spec)).toBe(before);
  });

  it.each([
    ['helm {} added to a multi-source sources[] entry', [{ ...repo }], [{ ...repo, helm: {} }]],
    ['kustomize {} removed from a multi-source sources[] entry', [{ ...repo, kustomize: {} }], [{ ...repo }]],
  ])('refused: %s (Argo CD never normalizes sources[])', (_what, start, next) => {
    const name = appWith({ source: undefined, sources: start });
    for (const identity of [CONTROLLER, ALICE]) {
      const result = mergePatch(identity, name, { spec: { sources: next } });
      expect(result.code).not.toBe(0);
    }
  });
});
