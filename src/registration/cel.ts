import type { LabelSelector } from '../config/index.js';
import { STAMP_ANNOTATION, type Rule } from '../guard/index.js';

/** Pieces of CEL shared by the webhooks' match conditions and the admission policy. */

export const celString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
export const celList = (items: string[]) => `[${items.map(celString).join(', ')}]`;

/** CEL for the value at `tokens` below `root`, null when absent (or when `root` is null). */
export function celValueAt(root: string, tokens: string[]): string {
  const checks = [`${root} != null`];
  let expr = root;
  for (const token of tokens) {
    checks.push(`${celString(token)} in ${expr}`);
    expr = `${expr}[${celString(token)}]`;
  }
  return `(${checks.join(' && ')} ? ${expr} : null)`;
}

/** CEL that is true when the request comes from one of these users or groups. */
export function identityExpression(users: string[], groups: string[]): string {
  const parts = [`request.userInfo.username in ${celList(users)}`];
  if (groups.length) parts.push(`(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in ${celList(groups)}))`);
  return parts.join(' || ');
}

/** The stamp annotation of `root` (object or oldObject), null when absent. */
export const celStamp = (root: string) => celValueAt(root, ['metadata', 'annotations', STAMP_ANNOTATION]);

/** The labels of `root`, an empty map when it has none (or `root` is null). */
export const celLabels = (root: string) =>
  `(${root} != null && 'labels' in ${root}.metadata && ${root}.metadata.labels != null ? ${root}.metadata.labels : {})`;

/** CEL that is true when the label map `labels` matches a Kubernetes label selector. */
export function selectorExpression(selector: LabelSelector | undefined, labels: string): string {
  const terms: string[] = [];
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    terms.push(`(${celString(key)} in ${labels} && ${labels}[${celString(key)}] == ${celString(value)})`);
  }
  for (const req of selector?.matchExpressions ?? []) {
    const has = `${celString(req.key)} in ${labels}`;
    const inValues = `(${has} && ${labels}[${celString(req.key)}] in ${celList(req.values ?? [])})`;
    terms.push(
      req.operator === 'In' ? inValues : req.operator === 'NotIn' ? `!${inValues}` : req.operator === 'Exists' ? `(${has})` : `!(${has})`,
    );
  }
  return terms.length ? terms.join(' && ') : 'true';
}

/** CEL: is `root` (object or oldObject, null for a CREATE or DELETE) selected by `rule`? */
export function membership(rule: Rule, root: string): string {
  const { group, resource, namespaces, labelSelector } = rule.config;
  const terms = [`${root} != null`, `request.resource.group == ${celString(group)}`, `request.resource.resource == ${celString(resource)}`];
  if (namespaces) terms.push(`request.namespace in ${celList(namespaces)}`);
  terms.push(selectorExpression(labelSelector, celLabels(root)));
  return terms.join(' && ');
}
