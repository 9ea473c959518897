import type { Policy } from './guard/index.js';
import { discover, KubeError, Resources, type KubeClient } from './kube/index.js';
import { ADMISSION_OBJECT_NAME, admissionResource, type AdmissionKind } from './registration/index.js';
import { STORE_KINDS, watchScopes } from './sync/index.js';

/** One thing spec-guard would need and does not have. */
export interface Problem {
  /** Where to fix it, e.g. "resources[1]" or "RBAC". */
  where: string;
  message: string;
}

export class PreflightError extends Error {
  constructor(readonly problems: Problem[]) {
    super(`cannot run; nothing was registered:\n${problems.map((p) => `  ${p.where}: ${p.message}`).join('\n')}`);
  }
}

type ApiResource = { name: string; verbs?: string[] };

/** Every configured resource exists at its version and can be listed, watched, patched and created. */
async function checkDiscovery(kube: KubeClient, policy: Policy): Promise<Problem[]> {
  const problems: Problem[] = [];
  const lists = new Map<string, Promise<ApiResource[] | undefined>>();
  for (const rule of policy.rules) {
    const { group, version, resource } = rule.config;
    const gv = group ? `${group}/${version}` : version;
    const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
    if (!lists.has(path)) lists.set(path, discover(kube, group, version));
    const list = await lists.get(path)!;
    const where = `resources[${rule.index}]`;
    if (!list) {
      problems.push({ where, message: `the API ${gv} is not served by this cluster (check group and version; \`kubectl api-resources --api-group=${group}\`)` });
      continue;
    }
    const found = list.find((r) => r.name === resource);
    if (!found) {
      const served = list.filter((r) => !r.name.includes('/')).map((r) => r.name);
      problems.push({ where, message: `${gv} has no resource "${resource}" (it serves: ${served.join(', ') || 'none'})` });
      continue;
    }
    const missing = ['get', 'list', 'watch', 'patch', 'create'].filter((v) => !found.verbs?.includes(v));
    if (missing.length) problems.push({ where, message: `${resource}.${gv} does not support ${missing.join(', ')}` });
  }
  return problems;
}

interface Access {
  verb: string;
  group: string;
  resource: string;
  namespace?: string;
  name?: string;
  why: string;
}

/** What spec-guard does with the API, as access checks. */
function accessNeeded(policy: Policy, namespace: string, register: boolean): Access[] {
  const needed: Access[] = [];
  for (const scope of watchScopes(policy)) {
    for (const verb of ['get', 'list', 'watch', 'patch', 'create']) {
      needed.push({ verb, group: scope.group, resource: scope.resource, namespace: scope.namespace, why: 'watch, revert and recreate guarded objects' });
    }
    needed.push({ verb: 'create', group: '', resource: 'events', namespace: scope.namespace, why: 'record Events on guarded objects' });
  }
  if (policy.readsNamespaceLabels) {
    for (const verb of ['get', 'list', 'watch']) needed.push({ verb, group: '', resource: 'namespaces', why: 'select namespaces by their labels (namespaceSelector)' });
  }
  for (const verb of STORE_KINDS[policy.config.store.type].secretVerbs) {
    needed.push({ verb, group: '', resource: 'secrets', namespace, why: `the ${policy.config.store.type} store` });
  }
  for (const verb of ['get', 'create', 'update']) {
    needed.push({ verb, group: '', resource: 'secrets', namespace, why: 'the stamp key, certificates and the store' });
    needed.push({ verb, group: 'coordination.k8s.io', resource: 'leases', namespace, why: 'leader election' });
  }
  const kinds: AdmissionKind[] = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration', ...(policy.config.admissionPolicy ? (['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'] as const) : [])];
  const admission = kinds.map(admissionResource);
  for (const resource of admission) {
    for (const verb of register ? ['get', 'list', 'watch', 'create', 'update'] : ['get']) {
      // Reads and updates name spec-guard's own object (RBAC may grant no more than that).
      const name = verb === 'get' || verb === 'update' ? ADMISSION_OBJECT_NAME : undefined;
      needed.push({ verb, group: 'admissionregistration.k8s.io', resource, name, why: register ? 'register and heal the admission objects' : 'verify that the admission objects stayed in place (attribution)' });
    }
  }
  return needed;
}

async function allowed(kube: KubeClient, a: Access): Promise<boolean> {
  const review = await Resources.of(kube, 'authorization.k8s.io', 'v1', 'selfsubjectaccessreviews').create<{ status?: { allowed?: boolean } }>(
    {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { verb: a.verb, group: a.group, resource: a.resource, namespace: a.namespace, name: a.name } },
    },
    { timeoutMs: 10_000 },
  );
  return review.status?.allowed === true;
}

async function checkAccess(kube: KubeClient, policy: Policy, namespace: string, register: boolean): Promise<Problem[]> {
  const needed = accessNeeded(policy, namespace, register);
  const results = await Promise.all(needed.map((a) => allowed(kube, a)));
  // One line per object kind and place: the verbs missing there.
  const missing = new Map<string, { verbs: string[]; why: string }>();
  needed.forEach((a, i) => {
    if (results[i]) return;
    const what = `${a.resource}${a.group ? `.${a.group}` : ''}${a.name ? ` ${a.name}` : ''} ${a.namespace ? `in namespace ${a.namespace}` : 'cluster-wide'}`;
    const entry = missing.get(what) ?? { verbs: [], why: a.why };
    entry.verbs.push(a.verb);
    missing.set(what, entry);
  });
  return [...missing].map(([what, { verbs, why }]) => ({ where: 'RBAC', message: `cannot ${verbs.join(', ')} ${what} (needed to ${why})` }));
}

/**
 * Checks, before anything is registered, that spec-guard can do its job: every configured
 * resource exists (discovery), every verb it needs is allowed (SelfSubjectAccessReview), the
 * store is writable. A fail-closed webhook registered by a process that then cannot run
 * would freeze every guarded kind; a failed check registers nothing and says what is wrong.
 */
export async function preflight(kube: KubeClient, policy: Policy, options: { namespace: string; register: boolean }): Promise<void> {
  let problems: Problem[];
  try {
    problems = [
      ...(await checkDiscovery(kube, policy)),
      ...(await checkAccess(kube, policy, options.namespace, options.register)),
      ...(await STORE_KINDS[policy.config.store.type].check(policy.config.store)),
    ];
  } catch (err) {
    const detail = err instanceof KubeError ? err.message : (err as Error).message;
    throw new Error(`cannot check what spec-guard needs; nothing was registered: ${detail}`);
  }
  if (problems.length) throw new PreflightError(problems);
}
