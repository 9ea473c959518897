import type { Policy } from '../guard/index.js';
import { ADMISSION_COLLECTIONS, ADMISSION_OBJECT_NAME, admissionResource, type AdmissionKind } from './shared.js';
import { SPEC_GUARD } from '../names.js';
import { STORE_SECRET_VERBS } from '../sync/store/kinds.js';

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
/** Events on guarded objects, wherever they are guarded. */
const EVENTS_RULE = { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] };
/** Secrets spec-guard keeps whatever its store: read, created, updated; watched (certificates); patched (rotation requests). */
const BASE_SECRET_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch'];

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
        EVENTS_RULE,
      ],
    ]),
  );
}

/**
 * The rules that do not depend on what the configuration guards: the chart renders them from
 * `charts/spec-guard/files/rbac.yaml`, which `npm run schema` writes from these (one source).
 */
export function fixedRules() {
  return {
    /** spec-guard registers its own admission objects (by name: create cannot be limited so). */
    register: [
      { apiGroups: ['admissionregistration.k8s.io'], resources: ADMISSION_KINDS, verbs: ['list', 'watch', 'create'] },
      { apiGroups: ['admissionregistration.k8s.io'], resources: ADMISSION_KINDS, verbs: ['get', 'update', 'patch'], resourceNames: [ADMISSION_OBJECT_NAME] },
      // The owner of the registered objects (this ClusterRole): read for its uid, so that an uninstall removes them.
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['get'], resourceNames: [SPEC_GUARD] },
    ] as PolicyRule[],
    /** A GitOps install applies them: spec-guard reads them, for attribution by continuity. */
    gitops: [{ apiGroups: ['admissionregistration.k8s.io'], resources: ADMISSION_KINDS, verbs: ['get'], resourceNames: [ADMISSION_OBJECT_NAME] }] as PolicyRule[],
    cluster: [
      { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
      // At start: does each trusted service account exist (an agent installed under another name)?
      { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['get'] },
    ] as PolicyRule[],
    /** Rules that select namespaces by label read them. */
    namespaces: { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] } as PolicyRule,
    guardedVerbs: GUARDED_VERBS,
    events: EVENTS_RULE,
    /** Its Secrets (stamp key, certificates, every kind of store: see sync/store/kinds.ts) and Lease, in its own namespace. */
    ownNamespace: [
      { apiGroups: [''], resources: ['secrets'], verbs: [...new Set([...BASE_SECRET_VERBS, ...STORE_SECRET_VERBS])] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    ] as PolicyRule[],
    /** --client-ca-from-cluster reads the apiserver's published client CA with the role every cluster has for that. */
    clientCaReader: { namespace: 'kube-system', role: 'extension-apiserver-authentication-reader' },
  };
}

/**
 * Least-privilege RBAC for a configuration: namespaced Roles wherever the rules name their
 * namespaces (a ClusterRole only for rules that do not); spec-guard's own admission objects
 * by name; its Secrets and Lease in its own namespace. Pure.
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
  const fixed = fixedRules();
  const guarded = guardedRules(policy);
  bind('ClusterRole', SPEC_GUARD, undefined, [
    ...(o.register ? fixed.register : fixed.gitops),
    ...fixed.cluster,
    ...(policy.readsNamespaceLabels ? [fixed.namespaces] : []),
    ...(guarded.get('') ?? []),
  ]);
  bind('Role', SPEC_GUARD, o.namespace, fixed.ownNamespace);
  objects.push({
    apiVersion: RBAC,
    kind: 'RoleBinding',
    metadata: { name: `${SPEC_GUARD}-client-ca-reader`, namespace: fixed.clientCaReader.namespace, labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: fixed.clientCaReader.role },
    subjects: [subject],
  });
  for (const [ns, rules] of [...guarded].filter(([ns]) => ns !== '').sort(([a], [b]) => a.localeCompare(b))) {
    bind('Role', `${SPEC_GUARD}-guarded`, ns, rules);
  }
  return objects;
}
