import type { Policy } from '../guard/index.js';
import { parsePointer } from '../guard/index.js';
import { celStamp, celValueAt, identityExpression, isNamespaceUpdate, membership, namespaceLeavesExpression, namespaceUpdateRule, selectsByMetadata } from './cel.js';
import { consumerExpression, policyCovers, policyDecidesExpression } from './render-policy.js';
import { ADMISSION_OBJECT_NAME, MANAGED_BY_LABEL, namespaceSelector, resourceRules } from './shared.js';

/** Where the apiserver reaches spec-guard: a URL base, or an in-cluster Service. */
export type WebhookEndpoint =
  | { url: string }
  | { service: { name: string; namespace: string; port: number } };

export interface RenderOptions {
  endpoint: WebhookEndpoint;
  /** PEM bundle of the CAs that sign the serving certificate. */
  caBundle: string;
  /** Namespaces never sent to the webhook (kube-system and spec-guard's own). */
  excludedNamespaces: string[];
}

/** CEL: does any of these pointers differ between object and oldObject? */
const anyChanged = (pointers: string[]) => [...new Set(pointers)].map(parsePointer).map((tokens) => `${celValueAt('object', tokens)} != ${celValueAt('oldObject', tokens)}`);

/**
 * CEL that is true unless an UPDATE leaves every door the writer may not change (for the
 * consumer: the guarded paths outside its own doors; for anyone else: every door), the stamp
 * and the object's membership of every selective rule as they were: only such writes need the
 * webhook. The consumer's status and operation writes therefore never reach it.
 */
export function guardedChangeExpression(policy: Policy): string {
  const doors = policy.rules.flatMap((r) => r.ownership.doors);
  const common = [`${celStamp('object')} != ${celStamp('oldObject')}`];
  for (const rule of policy.rules) {
    if (selectsByMetadata(rule)) common.push(`(${membership(rule, 'object', 'webhook')}) != (${membership(rule, 'oldObject', 'webhook')})`);
  }
  const others = [...anyChanged(doors.map((d) => d.pointer)), ...common].join(' || ');
  const consumers = policy.config.trust.normalizedWriters;
  const changes = consumers.length
    ? `(${consumerExpression(consumers)} ? (${[...anyChanged(doors.filter((d) => d.canonical && !d.consumer).map((d) => d.pointer)), ...common].join(' || ')}) : (${others}))`
    : others;
  const leaves = namespaceLeavesExpression(policy.rules);
  const guarded = `!(${isNamespaceUpdate}) && (request.operation != 'UPDATE' || ${changes})`;
  return leaves ? `(${leaves}) || (${guarded})` : `request.operation != 'UPDATE' || ${changes}`;
}

function clientConfig(endpoint: WebhookEndpoint, path: string, caBundle: string): Record<string, unknown> {
  // An empty bundle is left out, for a CA injector (cert-manager) to fill in.
  const base = caBundle ? { caBundle: Buffer.from(caBundle).toString('base64') } : {};
  if ('url' in endpoint) return { ...base, url: `${endpoint.url.replace(/\/+$/, '')}${path}` };
  return { ...base, service: { ...endpoint.service, path } };
}

/**
 * True when the in-apiserver policy holds the line for every rule that refuses or undoes
 * untrusted changes: it is then the fail-closed layer, and the guard webhook adds precision.
 */
export function policyHolds(policy: Policy): boolean {
  return policy.config.admissionPolicy && policy.rules.every((r) => r.mode === 'warn' || r.mode === 'off' || policyCovers(r));
}

/** The match conditions and failure policies both configurations are built from. */
function webhookConditions(policy: Policy) {
  const users = [...policy.config.trust.users, ...(policy.selfUser ? [policy.selfUser] : [])];
  const trusted = identityExpression(users, policy.trustedGroups);
  // With the in-apiserver policy in place for every rule that refuses or undoes untrusted
  // changes, the guard webhook adds precision (messages, normalizers, rewrite) but need not
  // fail closed: an outage then costs precision, not protection.
  const guardFailurePolicy = policyHolds(policy) ? 'Ignore' : 'Fail';
  // The policy leaves the spec of writers that need a normalizer to the webhook: for them the
  // webhook is the fail-closed layer, so their check fails closed (they only normalize, and
  // retry; the source of truth is never among them).
  const normalized = policy.config.trust.normalizedWriters;
  const isNormalized = { name: 'normalized-writer', expression: consumerExpression(normalized) };
  // What layer 0 decides alone skips the mutating webhook, so that a denial costs no hop. The
  // validating webhook still matches: the apiserver calls it only when the policy admitted the
  // write, which covers the second in which a new or restored policy is not in force yet.
  const decided = policyDecidesExpression(policy, 'webhook');
  return {
    guardFailurePolicy,
    isTrusted: { name: 'trusted', expression: trusted },
    isUntrusted: { name: 'untrusted', expression: `!(${trusted})` },
    guardedChange: { name: 'guarded-change', expression: guardedChangeExpression(policy) },
    isNormalized,
    notNormalized: { name: 'not-normalized-writer', expression: `!(${isNormalized.expression})` },
    splitNormalized: guardFailurePolicy === 'Ignore' && normalized.length > 0,
    notDecided: decided ? [{ name: 'not-decided-by-policy', expression: `!(${decided})` }] : [],
  };
}

type Conditions = ReturnType<typeof webhookConditions>;

/** What every webhook of both configurations shares. */
const commonFields = (policy: Policy, options: RenderOptions) => ({
  admissionReviewVersions: ['v1'],
  sideEffects: 'NoneOnDryRun',
  timeoutSeconds: 3,
  matchPolicy: 'Equivalent',
  namespaceSelector: namespaceSelector(policy, options.excludedNamespaces),
});

const metadata = { name: ADMISSION_OBJECT_NAME, labels: MANAGED_BY_LABEL };

/** Trusted writes stamped (Ignore: never block the source of truth); untrusted ones the policy left undecided, checked. */
function mutatingConfiguration(policy: Policy, options: RenderOptions, c: Conditions) {
  const common = commonFields(policy, options);
  const webhook = (name: string, failurePolicy: string, matchConditions: unknown[]) => ({
    ...common,
    name,
    clientConfig: clientConfig(options.endpoint, '/mutate', options.caBundle),
    rules: resourceRules(policy.rules, ['CREATE', 'UPDATE']),
    failurePolicy,
    reinvocationPolicy: 'IfNeeded',
    matchConditions,
  });
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata,
    webhooks: [webhook('stamp.spec-guard.io', 'Ignore', [c.isTrusted]), webhook('guard.spec-guard.io', c.guardFailurePolicy, [c.isUntrusted, c.guardedChange, ...c.notDecided])],
  };
}

/** Untrusted changes checked (normalizing writers apart, failing closed); trusted deletes tombstoned (Fail). */
function validatingConfiguration(policy: Policy, options: RenderOptions, c: Conditions) {
  const common = commonFields(policy, options);
  const webhook = (name: string, rules: unknown[], failurePolicy: string, matchConditions: unknown[]) => ({
    ...common,
    name,
    clientConfig: clientConfig(options.endpoint, '/validate', options.caBundle),
    rules,
    failurePolicy,
    matchConditions,
  });
  const guardRules = [...resourceRules(policy.rules, ['CREATE', 'UPDATE', 'DELETE']), ...(policy.readsNamespaceLabels ? [namespaceUpdateRule] : [])];
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata,
    webhooks: [
      webhook('guard.spec-guard.io', guardRules, c.guardFailurePolicy, [c.isUntrusted, c.guardedChange, ...(c.splitNormalized ? [c.notNormalized] : [])]),
      ...(c.splitNormalized ? [webhook('normalized.spec-guard.io', resourceRules(policy.rules, ['UPDATE']), 'Fail', [c.isUntrusted, c.guardedChange, c.isNormalized])] : []),
      webhook('tombstone.spec-guard.io', resourceRules(policy.rules, ['DELETE']), 'Fail', [c.isTrusted]),
    ],
  };
}

/**
 * The MutatingWebhookConfiguration and ValidatingWebhookConfiguration for a policy:
 * trusted writers are stamped (failurePolicy Ignore: never block the source of truth);
 * untrusted writers are checked, failing closed only where the admission policy does not
 * already hold the line (see render-policy.ts); trusted deletes record a tombstone (Fail,
 * since a delete without one would be undone).
 */
export function renderWebhookConfigurations(policy: Policy, options: RenderOptions) {
  const conditions = webhookConditions(policy);
  return { mutating: mutatingConfiguration(policy, options, conditions), validating: validatingConfiguration(policy, options, conditions) };
}

export type WebhookConfigurations = ReturnType<typeof renderWebhookConfigurations>;
