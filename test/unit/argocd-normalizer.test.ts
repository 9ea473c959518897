import { describe, expect, it } from '@jest/globals';
import { argocdApplication, GuardedView } from '../../src/guard/index.js';

// Each rule mirrors a piece of argo-cd v3: NormalizeApplicationSpec and NormalizeSource in
// util/argo/argo.go, and the IsZero methods in pkg/apis/application/v1alpha1/types.go.
const normalize = (spec: Record<string, unknown>) => argocdApplication('/spec', spec) as Record<string, any>;
const view = new GuardedView(['/spec'], [], argocdApplication);
const equal = (a: Record<string, unknown>, b: Record<string, unknown>) => view.of({ spec: a }).hash === view.of({ spec: b }).hash;
const source = { repoURL: 'https://example.com/r.git', path: 'p', targetRevision: 'HEAD' };

describe('argocd-application normalizer (NormalizeApplicationSpec)', () => {
  it('project "" or absent is "default" (NormalizeApplicationSpec: spec.Project == "")', () => {
    expect(normalize({ project: '' }).project).toBe('default');
    expect(normalize({}).project).toBe('default');
    expect(normalize({ project: 'team' }).project).toBe('team');
  });

  it('drops syncPolicy only when SyncPolicy.IsZero(): no syncOptions, automated, retry, managedNamespaceMetadata', () => {
    expect(normalize({ syncPolicy: {} })).not.toHaveProperty('syncPolicy');
    expect(normalize({ syncPolicy: { syncOptions: [] } })).not.toHaveProperty('syncPolicy');
    for (const kept of [{ automated: {} }, { automated: { enabled: false } }, { retry: {} }, { managedNamespaceMetadata: {} }, { syncOptions: ['CreateNamespace=true'] }]) {
      expect(normalize({ syncPolicy: kept }).syncPolicy).toEqual(kept);
    }
  });

  it('drops a zero helm block (ApplicationSourceHelm.IsZero), keeps valuesObject: {} (ValuesIsEmpty is false for it)', () => {
    expect(normalize({ source: { ...source, helm: {} } }).source).not.toHaveProperty('helm');
    expect(normalize({ source: { ...source, helm: { valueFiles: [], skipCrds: false } } }).source).not.toHaveProperty('helm');
    expect(normalize({ source: { ...source, helm: { valuesObject: {} } } }).source.helm).toEqual({ valuesObject: {} });
    expect(normalize({ source: { ...source, helm: { releaseName: 'r' } } }).source.helm).toEqual({ releaseName: 'r' });
  });

  it('drops a zero kustomize block (ApplicationSourceKustomize.IsZero ignores the force* and label flags)', () => {
    expect(normalize({ source: { ...source, kustomize: {} } }).source).not.toHaveProperty('kustomize');
    expect(normalize({ source: { ...source, kustomize: { forceCommonLabels: true } } }).source).not.toHaveProperty('kustomize');
    expect(normalize({ source: { ...source, kustomize: { labelWithoutSelector: true, commonAnnotationsEnvsubst: true } } }).source).not.toHaveProperty('kustomize');
    expect(normalize({ source: { ...source, kustomize: { namePrefix: 'x-' } } }).source.kustomize).toEqual({ namePrefix: 'x-' });
  });

  it('directory: zero (recurse false, zero jsonnet) keeps only include/exclude (NormalizeSource), else is dropped', () => {
    expect(normalize({ source: { ...source, directory: {} } }).source).not.toHaveProperty('directory');
    expect(normalize({ source: { ...source, directory: { recurse: false } } }).source).not.toHaveProperty('directory');
    expect(normalize({ source: { ...source, directory: { recurse: false, include: '*.yaml' } } }).source.directory).toEqual({ include: '*.yaml' });
    expect(normalize({ source: { ...source, directory: { recurse: true } } }).source.directory).toEqual({ recurse: true });
    expect(normalize({ source: { ...source, directory: { jsonnet: { libs: ['l'] } } } }).source.directory).toEqual({ jsonnet: { libs: ['l'] } });
  });

  it('leaves multi-source `sources` as written (Argo CD normalizes copies of them)', () => {
    const sources = [{ ...source, helm: {} }, { ...source, kustomize: {} }];
    expect(normalize({ sources }).sources).toEqual(sources);
  });
});

describe('every change that changes what Argo CD does is a guarded change', () => {
  const base = { project: 'default', source, destination: { server: 'https://kubernetes.default.svc', namespace: 'g' } };
  const changes: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['automated: {} added (auto-sync on)', { ...base, syncPolicy: {} }, { ...base, syncPolicy: { automated: {} } }],
    ['automated added to an absent syncPolicy', base, { ...base, syncPolicy: { automated: {} } }],
    ['enabled: false → {} (auto-sync on)', { ...base, syncPolicy: { automated: { enabled: false } } }, { ...base, syncPolicy: { automated: {} } }],
    ['automated: {prune: false, selfHeal: false} removed (auto-sync off)', { ...base, syncPolicy: { automated: { prune: false, selfHeal: false } } }, base],
    ['retry: {} added', base, { ...base, syncPolicy: { retry: {} } }],
    ['helm: {} added in sources[] (source type)', { ...base, source: undefined, sources: [source] }, { ...base, source: undefined, sources: [{ ...source, helm: {} }] }],
    ['kustomize: {} removed from sources[]', { ...base, source: undefined, sources: [{ ...source, kustomize: {} }] }, { ...base, source: undefined, sources: [source] }],
    ['helm.valuesObject: {} removed', { ...base, source: { ...source, helm: { valuesObject: {} } } }, base],
    ['a null member where there was none', base, { ...base, destination: { ...base.destination, name: null } }],
  ];
  it.each(changes)('%s', (_name, before, after) => {
    expect(equal(before, after)).toBe(false);
  });

  const normalizing: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['project "" → default', { ...base, project: '' }, base],
    ['syncPolicy: {} → dropped', { ...base, syncPolicy: {} }, base],
    ['source.helm: {} → dropped', { ...base, source: { ...source, helm: {} } }, base],
    ['source.kustomize: {forceCommonLabels: true} → dropped', { ...base, source: { ...source, kustomize: { forceCommonLabels: true } } }, base],
    ['source.directory: {recurse: false} → dropped', { ...base, source: { ...source, directory: { recurse: false } } }, base],
  ];
  it.each(normalizing)('the controller normalizing %s is no change', (_name, before, after) => {
    expect(equal(before, after)).toBe(true);
  });
});
