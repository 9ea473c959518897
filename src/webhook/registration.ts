import type { Policy } from '../sync/index.js';
import { parsePointer, STAMP_ANNOTATION } from '../sync/index.js';

/** Name of both webhook configurations spec-guard owns. */
export const WEBHOOK_CONFIGURATION_NAME = 'spec-guard';
export const MANAGED_BY_LABEL = { 'app.kubernetes.io/managed-by': 'spec-guard' };

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

const celString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const celList = (items: string[]) => `[${items.map(celString).join(', ')}]`;

/** CEL for the value at `tokens` below `root`, null when absent. */
function celValueAt(root: string, tokens: string[]): string {
  const checks: string[] = [];
  let expr = root;
  for (const token of tokens) {
    checks.push(`${celString(token)} in ${expr}`);
    expr = `${expr}[${celString(token)}]`;
  }
  return checks.length ? `(${checks.join(' && ')} ? ${expr} : null)` : expr;
}

/** CEL that is true when the request comes from a trusted identity. */
export function trustedExpression(users: string[], groups: string[]): string {
  const parts = [`request.userInfo.username in ${celList(users)}`];
  if (groups.length) parts.push(`(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in ${celList(groups)}))`);
  return parts.join(' || ');
}

/** CEL that is true unless an UPDATE leaves every guarded path and the stamp as they were. */
export function guardedChangeExpression(guardedPointers: string[]): string {
  const stampTokens = ['metadata', 'annotations', STAMP_ANNOTATION];
  const compared = [...new Set(guardedPointers)].map(parsePointer).concat([stampTokens]);
  const changes = compared.map((tokens) => `${celValueAt('object', tokens)} != ${celValueAt('oldObject', tokens)}`);
  return `request.operation != 'UPDATE' || ${changes.join(' || ')}`;
}

function clientConfig(endpoint: WebhookEndpoint, path: string, caBundle: string): Record<string, unknown> {
  // An empty bundle is left out, for a CA injector (cert-manager) to fill in.
  const base = caBundle ? { caBundle: Buffer.from(caBundle).toString('base64') } : {};
  if ('url' in endpoint) return { ...base, url: `${endpoint.url.replace(/\/+$/, '')}${path}` };
  return { ...base, service: { ...endpoint.service, path } };
}

function rulesFor(policy: Policy, operations: string[]): Record<string, unknown>[] {
  const seen = new Set<string>();
  const rules: Record<string, unknown>[] = [];
  for (const rule of policy.rules) {
    const key = `${rule.config.group}/${rule.config.resource}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rules.push({ apiGroups: [rule.config.group], apiVersions: ['*'], resources: [rule.config.resource], operations, scope: '*' });
  }
  return rules;
}

/**
 * Only the namespaces the rules name, when they all name some: a webhook that fails
 * closed must not stand in front of every Secret write of the cluster because one rule
 * guards repository Secrets in argocd. Else every namespace but the excluded ones.
 */
function namespaceSelector(policy: Policy, excluded: string[]) {
  const named = policy.rules.every((r) => r.config.namespaces);
  if (!named) return { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: excluded }] };
  const namespaces = [...new Set(policy.rules.flatMap((r) => r.config.namespaces!))].filter((ns) => !excluded.includes(ns));
  return { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }] };
}

/**
 * The MutatingWebhookConfiguration and ValidatingWebhookConfiguration for a policy:
 * trusted writers are stamped (failurePolicy Ignore: never block the source of truth);
 * untrusted writers are checked (Fail); trusted deletes record a tombstone (Fail, since
 * a delete without one would be undone).
 */
export function renderWebhookConfigurations(policy: Policy, options: RenderOptions) {
  const users = [...policy.config.trust.users, ...(policy.selfUser ? [policy.selfUser] : [])];
  const trusted = trustedExpression(users, policy.config.trust.groups);
  const changed = guardedChangeExpression(policy.rules.flatMap((r) => r.config.guardedPaths));
  const common = {
    admissionReviewVersions: ['v1'],
    sideEffects: 'NoneOnDryRun',
    timeoutSeconds: 3,
    matchPolicy: 'Equivalent',
    namespaceSelector: namespaceSelector(policy, options.excludedNamespaces),
  };
  const isTrusted = { name: 'trusted', expression: trusted };
  const isUntrusted = { name: 'untrusted', expression: `!(${trusted})` };
  const guardedChange = { name: 'guarded-change', expression: changed };
  const metadata = { name: WEBHOOK_CONFIGURATION_NAME, labels: MANAGED_BY_LABEL };

  const mutating = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata,
    webhooks: [
      {
        ...common,
        name: 'stamp.spec-guard.io',
        clientConfig: clientConfig(options.endpoint, '/mutate', options.caBundle),
        rules: rulesFor(policy, ['CREATE', 'UPDATE']),
        failurePolicy: 'Ignore',
        reinvocationPolicy: 'IfNeeded',
        matchConditions: [isTrusted],
      },
      {
        ...common,
        name: 'guard.spec-guard.io',
        clientConfig: clientConfig(options.endpoint, '/mutate', options.caBundle),
        rules: rulesFor(policy, ['CREATE', 'UPDATE']),
        failurePolicy: 'Fail',
        reinvocationPolicy: 'IfNeeded',
        matchConditions: [isUntrusted, guardedChange],
      },
    ],
  };
  const validating = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata,
    webhooks: [
      {
        ...common,
        name: 'guard.spec-guard.io',
        clientConfig: clientConfig(options.endpoint, '/validate', options.caBundle),
        rules: rulesFor(policy, ['CREATE', 'UPDATE', 'DELETE']),
        failurePolicy: 'Fail',
        matchConditions: [isUntrusted, guardedChange],
      },
      {
        ...common,
        name: 'tombstone.spec-guard.io',
        clientConfig: clientConfig(options.endpoint, '/validate', options.caBundle),
        rules: rulesFor(policy, ['DELETE']),
        failurePolicy: 'Fail',
        matchConditions: [isTrusted],
      },
    ],
  };
  return { mutating, validating };
}

export type WebhookConfigurations = ReturnType<typeof renderWebhookConfigurations>;
