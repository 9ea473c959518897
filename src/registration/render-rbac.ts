import type { Policy } from '../guard/index.js';
import { ADMISSION_COLLECTIONS, ADMISSION_OBJECT_NAME, admissionResource, type AdmissionKind } from './shared.js';
import { SPEC_GUARD } from '../names.js';

export interface RbacOptions {
  /** spec-guard's namespace, where its service account, Secrets and Lease live. */
  namespace: string;
  serviceAccount: string;
  /** False for GitOps installs that apply the admission objects themselves (`serve --no-register`). */
  register: boolean;
}

const RBAC = 'rbac.authorization.k8s.io/v1';
const ADMISSION_KINDS = (Object.keys(ADMISSION_COLLECTIONS) as AdmissionKind[]).map(admissionResource);
/** What the watcher does with a guarded resource: read, watch, revert (patch), recreate (create). */
const GUARDED_VERBS = ['get', 'list', 'watch', 'create', 'patch'];

interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** Guarded resources by namespace ('' for rules without named namespaces: cluster-wide), as RBAC rules. */
function guardedRules(policy: Policy): Map<string, PolicyRule[]> {
  const byNamespace = new Map<string, Map<string, Set<string>>>();
  for (const rule of policy.rules) {
    const { group, resource, namespaces } = rule.config;
    for (const ns of namespaces ?? ['']) {
      const groups = byNamespace.get(ns) ?? new Map<string, Set<string>>();
      byNamespace.set(ns, groups);
      const resources = groups.get(group) ?? new Set<string>();
      groups.set(group, resources);
      resources.add(resource);
    }
  }
  return new Map(
    [...byNamespace].map(([ns, groups]) => [
      ns,
      [
        ...[...groups].sort(([a], [b]) => a.localeCompare(b)).map(([group, resources]) => ({ apiGroups: [group], resources: [...resources].sort(), verbs: GUARDED_VERBS })),
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      ],
    ]),
  );
}

/**
 * Least-privilege RBAC for a configuration: namespaced Roles wherever the rules name their
 * namespaces (a ClusterRole only for rules that do not); spec-guard's own admission objects
 * by name (create cannot be limited by name, so it is granted only when spec-guard
 * registers them; a GitOps install gets read access, for attribution by continuity); its
 * Secrets and Lease in its own namespace. Pure.
 */
export function renderRbac(policy: Policy, o: RbacOptions): Array<Record<string, unknown>> {
  const subject = { kind: 'ServiceAccount', name: o.serviceAccount, namespace: o.namespace };
  const labels = { 'app.kubernetes.io/name': SPEC_GUARD };
  const objects: Array<Record<string, unknown>> = [];
  const bind = (kind: 'ClusterRole' | 'Role', name: string, namespace: string | undefined, rules: PolicyRule[]) => {
    const meta = { name, ...(namespace ? { namespace } : {}), labels };
    objects.push({ apiVersion: RBAC, kind, metadata: meta, rules });
    objects.push({ apiVersion: RBAC, kind: `${kind}Binding`, metadata: meta, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name }, subjects: [subject] });
  };
  const guarded = guardedRules(policy);
  const admission: PolicyRule[] = o.register
    ? [
        { apiGroups: ['admissionregistration.k8s.io'], resources: ADMISSION_KINDS, verbs: ['list', 'watch', 'create'] },
        { apiGroups: ['admissionregistration.k8s.io'], resources: ADMISSION_KINDS, verbs: ['get', 'update', 'patch'], resourceNames: [ADMISSION_OBJECT_NAME] },
        // The owner of the registered objects (this ClusterRole): read for its uid, so that an uninstall removes them.
        { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['get'], resourceNames: [SPEC_GUARD] },
      ]
    : [{ apiGroups: ['admissionregistration.k8s.io'], resources: ADMISSION_KINDS, verbs: ['get'], resourceNames: [ADMISSION_OBJECT_NAME] }];
  bind('ClusterRole', SPEC_GUARD, undefined, [
    ...admission,
    { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
    // At start: does each trusted service account exist (an agent installed under another name)?
    { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['get'] },
    ...(policy.readsNamespaceLabels ? [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] }] : []),
    ...(guarded.get('') ?? []),
  ]);
  bind('Role', SPEC_GUARD, o.namespace, [
    // delete: the Secret store removes the shards of an earlier layout once it has grown.
    { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  ]);
  // --client-ca-from-cluster reads the apiserver's published client CA with the role every
  // cluster has for that (as aggregated API servers do).
  objects.push({
    apiVersion: RBAC,
    kind: 'RoleBinding',
    metadata: { name: `${SPEC_GUARD}-client-ca-reader`, namespace: 'kube-system', labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'extension-apiserver-authentication-reader' },
    subjects: [subject],
  });
  for (const [ns, rules] of [...guarded].filter(([ns]) => ns !== '').sort(([a], [b]) => a.localeCompare(b))) {
    bind('Role', `${SPEC_GUARD}-guarded`, ns, rules);
  }
  return objects;
}
