import type { Policy, Rule } from '../guard/index.js';
import { MANAGED_BY_LABEL, SPEC_GUARD } from '../names.js';

/** Name of every admission object spec-guard owns: both webhook configurations, the policy and its binding. */
export const ADMISSION_OBJECT_NAME = SPEC_GUARD;
export { MANAGED_BY_LABEL };

/** Where each kind of admission object spec-guard owns is listed. */
export const ADMISSION_COLLECTIONS = {
  MutatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
  ValidatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  ValidatingAdmissionPolicy: '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies',
  ValidatingAdmissionPolicyBinding: '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings',
} as const;
export type AdmissionKind = keyof typeof ADMISSION_COLLECTIONS;
/** The resource name of each kind (the last segment of its collection path). */
export const admissionResource = (kind: AdmissionKind): string => ADMISSION_COLLECTIONS[kind].split('/').pop()!;

/** Admission rules for the resources of `rules`, one per group and resource. */
export function resourceRules(rules: Rule[], operations: string[]): Record<string, unknown>[] {
  const seen = new Set<string>();
  const out: Record<string, unknown>[] = [];
  for (const rule of rules) {
    const key = `${rule.config.group}/${rule.config.resource}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ apiGroups: [rule.config.group], apiVersions: ['*'], resources: [rule.config.resource], operations, scope: '*' });
  }
  return out;
}

/**
 * Only the namespaces the rules name, when they all name some: a layer that fails closed
 * must not stand in front of every Secret write of the cluster because one rule guards
 * repository Secrets in argocd. Else every namespace but the excluded ones.
 */
export function namespaceSelector(policy: Policy, excluded: string[]) {
  const named = policy.rules.every((r) => r.config.namespaces);
  if (!named) return { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: excluded }] };
  const namespaces = [...new Set(policy.rules.flatMap((r) => r.config.namespaces!))].filter((ns) => !excluded.includes(ns));
  return { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }] };
}
