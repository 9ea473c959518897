import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/index.js';
import { Policy } from '../../src/guard/index.js';
import { renderRbac } from '../../src/registration/index.js';

const root = new URL('../../', import.meta.url);
const render = (config: string, register = true) => renderRbac(new Policy(loadConfig(new URL(config, root).pathname)), { namespace: 'spec-guard', serviceAccount: 'spec-guard', register });
const committed = (file: string) => parseAllDocuments(readFileSync(new URL(file, root), 'utf8')).map((d) => d.toJS());

describe('least-privilege RBAC', () => {
  it.each([
    ['manifests/overlays/managed-agent/config.yaml', 'manifests/overlays/managed-agent/rbac.yaml'],
    ['manifests/overlays/principal-autonomous/config.yaml', 'manifests/overlays/principal-autonomous/rbac.yaml'],
    ['test/e2e/fixtures/config.yaml', 'test/e2e/fixtures/rbac.yaml'],
  ])('the committed RBAC for %s is what spec-guard renders for it', (config, rbac) => {
    expect(committed(rbac)).toEqual(render(config));
  });

  it('guarded resources get namespaced Roles where rules name namespaces; a ClusterRole grants them only for rules that do not', () => {
    const objects = render('manifests/overlays/managed-agent/config.yaml') as Array<{ kind: string; metadata: { name: string; namespace?: string }; rules?: Array<{ resources: string[]; verbs: string[]; resourceNames?: string[] }> }>;
    const cluster = objects.find((o) => o.kind === 'ClusterRole')!;
    expect(cluster.rules!.flatMap((r) => r.resources)).not.toContain('applications');
    const guarded = objects.find((o) => o.kind === 'Role' && o.metadata.namespace === 'argocd')!;
    expect(guarded.rules!.flatMap((r) => r.resources).sort()).toEqual(['applications', 'appprojects', 'events', 'secrets']);
    // Updates of admission objects are limited to spec-guard's own by name.
    expect(cluster.rules!.filter((r) => r.verbs.includes('update')).every((r) => r.resourceNames?.join() === 'spec-guard')).toBe(true);
    const wide = render('test/unit/fixtures/cluster-wide.yaml') as typeof objects;
    expect(wide.find((o) => o.kind === 'ClusterRole')!.rules!.flatMap((r) => r.resources)).toContain('applications');
  });

  it('the GitOps variant may read its admission objects, not create or update any', () => {
    const cluster = (render('manifests/overlays/managed-agent/config.yaml', false) as Array<{ kind: string; rules?: Array<{ resources: string[]; verbs: string[] }> }>).find((o) => o.kind === 'ClusterRole')!;
    const admission = cluster.rules!.filter((r) => r.resources.includes('mutatingwebhookconfigurations'));
    expect(admission.flatMap((r) => r.verbs)).toEqual(['get']);
  });
});
