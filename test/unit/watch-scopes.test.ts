import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '../../src/config/index.js';
import { Policy } from '../../src/guard/index.js';
import { watchScopes } from '../../src/sync/index.js';

const policy = (resources: string) => new Policy(parseConfig(`resources:\n${resources}`, 'c.yaml'));

describe('watch scopes', () => {
  it('watches per namespace when every rule of a resource names its namespaces', () => {
    const scopes = watchScopes(
      policy(
        '  - {group: argoproj.io, resource: applications, namespaces: [a, b]}\n' +
          '  - {group: argoproj.io, resource: applications, namespaces: [b, c], mode: warn}\n' +
          '  - {group: "", resource: secrets, version: v1, namespaces: [argocd], guardedPaths: [/data]}\n',
      ),
    );
    expect(scopes).toEqual([
      { group: 'argoproj.io', version: 'v1alpha1', resource: 'applications', namespace: 'a' },
      { group: 'argoproj.io', version: 'v1alpha1', resource: 'applications', namespace: 'b' },
      { group: 'argoproj.io', version: 'v1alpha1', resource: 'applications', namespace: 'c' },
      { group: '', version: 'v1', resource: 'secrets', namespace: 'argocd' },
    ]);
  });

  it('watches cluster-wide when any rule covers every namespace', () => {
    const scopes = watchScopes(
      policy('  - {group: argoproj.io, resource: applications, namespaces: [a]}\n  - {group: argoproj.io, resource: applications}\n'),
    );
    expect(scopes).toEqual([{ group: 'argoproj.io', version: 'v1alpha1', resource: 'applications' }]);
  });
});
