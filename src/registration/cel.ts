import type { LabelSelector } from '../config/index.js';
import { namePatternRegex, STAMP_ANNOTATION, type Rule } from '../guard/index.js';

/** Pieces of CEL shared by the webhooks' match conditions and the admission policy. */

export const celString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
export const celList = (items: string[]) => `[${items.map(celString).join(', ')}]`;

/**
 * CEL that builds one of guard/messages.ts's denials, its arguments being CEL expressions:
 * the message function is called with markers, and the text between them becomes literals.
 */
export function celMessage<A extends string[]>(message: (...args: A) => string, ...args: { [K in keyof A]: string }): string {
  const marked = message(...(args.map((_, i) => `\u0000${i}\u0000`) as A));
  const parts = marked.split(/\u0000(\d+)\u0000/);
  const pieces = parts.map((part, i) => (i % 2 === 0 ? (part ? celString(part) : '') : `(${args[Number(part)]})`));
  return pieces.filter(Boolean).join(' + ');
}

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

/** A metadata map of `root` (its labels or annotations), an empty map when it has none (or `root` is null). */
export const celMetadataMap = (root: string, field: 'labels' | 'annotations') =>
  `(${root} != null && '${field}' in ${root}.metadata && ${root}.metadata.${field} != null ? ${root}.metadata.${field} : {})`;

/** CEL that is true when the string map `labels` matches a label selector (`matches`: its matchLabels or matchAnnotations). */
function selectorExpression(selector: Pick<LabelSelector, 'matchExpressions'> | undefined, matches: Record<string, string> | undefined, labels: string, present?: string): string {
  // `present`: a test that must hold before `labels` is read (a typed object's optional field).
  const hasKey = (key: string) => `${present ? `${present} && ` : ''}${celString(key)} in ${labels}`;
  const terms: string[] = [];
  for (const [key, value] of Object.entries(matches ?? {})) {
    terms.push(`(${hasKey(key)} && ${labels}[${celString(key)}] == ${celString(value)})`);
  }
  for (const req of selector?.matchExpressions ?? []) {
    const has = hasKey(req.key);
    const inValues = `(${has} && ${labels}[${celString(req.key)}] in ${celList(req.values ?? [])})`;
    terms.push(
      req.operator === 'In' ? inValues : req.operator === 'NotIn' ? `!${inValues}` : req.operator === 'Exists' ? `(${has})` : `!(${has})`,
    );
  }
  return terms.length ? terms.join(' && ') : 'true';
}

/**
 * Where membership is evaluated. The admission policy sees the request's namespace
 * (`namespaceObject`); a webhook's match conditions do not, so there a namespace selector
 * is left out: the condition then holds for a superset, and the webhook decides exactly.
 */
export type CelScope = 'policy' | 'webhook';

/** CEL: is `root` (object or oldObject, null for a CREATE or DELETE) selected by `rule`? */
export function membership(rule: Rule, root: string, scope: CelScope): string {
  const { group, resource, namespaces, namespaceSelector, names, labelSelector, annotationSelector } = rule.config;
  const terms = [`${root} != null`, `request.resource.group == ${celString(group)}`, `request.resource.resource == ${celString(resource)}`];
  if (namespaces) terms.push(`request.namespace in ${celList(namespaces)}`);
  if (namespaceSelector && scope === 'policy') {
    // namespaceObject is typed (a Namespace), unlike object: its optional labels are tested with has().
    const labels = selectorExpression(namespaceSelector, namespaceSelector.matchLabels, 'namespaceObject.metadata.labels', 'has(namespaceObject.metadata.labels)');
    terms.push(`namespaceObject != null && (${labels})`);
  }
  // A create by generateName has no name while it is mutated: it may become one that matches.
  if (names) terms.push(`(!('name' in ${root}.metadata) || ${root}.metadata.name == '' || ${root}.metadata.name.matches(${celString(namePatternRegex(names))}))`);
  terms.push(selectorExpression(labelSelector, labelSelector?.matchLabels, celMetadataMap(root, 'labels')));
  terms.push(selectorExpression(annotationSelector, annotationSelector?.matchAnnotations, celMetadataMap(root, 'annotations')));
  return terms.filter((t) => t !== 'true').join(' && ');
}

/** Can a write change whether an object is in this rule's selection (by its labels or annotations)? */
export const selectsByMetadata = (rule: Rule): boolean => rule.selection.keys.labelKeys.length > 0 || rule.selection.keys.annotationKeys.length > 0;

/** CEL: is this request an UPDATE of a namespace? */
export const isNamespaceUpdate = "request.resource.group == '' && request.resource.resource == 'namespaces' && request.operation == 'UPDATE'";

/**
 * CEL: does this namespace UPDATE take the namespace out of a selection of `rules` (those that
 * select namespaces by label)? Its old labels are selected, its new ones not.
 */
export function namespaceLeavesExpression(rules: Rule[]): string | undefined {
  const selecting = rules.filter((r) => r.config.namespaceSelector && r.mode !== 'off');
  if (!selecting.length) return undefined;
  const selected = (r: Rule, root: string) => `(${selectorExpression(r.config.namespaceSelector, r.config.namespaceSelector!.matchLabels, celMetadataMap(root, 'labels'))})`;
  return `${isNamespaceUpdate} && (${selecting.map((r) => `(${selected(r, 'oldObject')} && !${selected(r, 'object')})`).join(' || ')})`;
}

/**
 * The admission rule for namespace UPDATEs, where a rule selects namespaces by label: the
 * status and finalize subresources keep metadata changes too, labels included.
 */
export const namespaceUpdateRule = { apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces', 'namespaces/status', 'namespaces/finalize'], operations: ['UPDATE'], scope: 'Cluster' };
