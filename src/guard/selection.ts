import type { AnnotationSelector, LabelSelector, ResourceRuleConfig } from '../config/schema.js';
import type { PatchOp } from './guarded-view.js';

/**
 * Which objects a rule selects: by namespace (named, or by the namespace's labels), name
 * pattern, labels and annotations. Pure; the CEL in registration/cel.ts says the same.
 */

type StringMap = Record<string, string> | undefined;

/** What selection reads of one version of an object. */
export interface Selectable {
  name?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/**
 * What selection reads of a version of an object that exists: an object without metadata
 * selects as one with empty metadata (never as no object, which would select nothing).
 */
export const selectable = (object: { metadata?: Selectable } | null | undefined): Selectable | undefined =>
  object ? (object.metadata ?? {}) : undefined;

/** The labels of a namespace; undefined when they are not known (selected: the guard errs on the safe side). */
export type NamespaceLabels = (namespace: string) => StringMap;

interface MapSelector {
  matches?: Record<string, string>;
  matchExpressions?: LabelSelector['matchExpressions'];
}

const asMapSelector = (s: LabelSelector | undefined): MapSelector | undefined => s && { matches: s.matchLabels, matchExpressions: s.matchExpressions };
const fromAnnotations = (s: AnnotationSelector | undefined): MapSelector | undefined => s && { matches: s.matchAnnotations, matchExpressions: s.matchExpressions };

/** Kubernetes label-selector semantics, over any string map. */
function mapMatcher(selector: MapSelector | undefined): (map: StringMap) => boolean {
  if (!selector || (!Object.keys(selector.matches ?? {}).length && !selector.matchExpressions?.length)) return () => true;
  return (map = {}) => {
    for (const [k, v] of Object.entries(selector.matches ?? {})) if (map[k] !== v) return false;
    for (const req of selector.matchExpressions ?? []) {
      const has = Object.hasOwn(map, req.key);
      const inValues = has && (req.values ?? []).includes(map[req.key]!);
      const ok = req.operator === 'In' ? inValues : req.operator === 'NotIn' ? !inValues : req.operator === 'Exists' ? has : !has;
      if (!ok) return false;
    }
    return true;
  };
}

/**
 * The anchored regular expression of name patterns. Names hold only [a-z0-9.-], so escaping
 * "." is all it takes; JavaScript and RE2 read the result alike.
 */
export function namePatternRegex(patterns: string[]): string {
  return `^(${patterns.map((p) => p.replace(/\./g, '\\.').replace(/\*/g, '.*')).join('|')})$`;
}

/** Matches one version of an object (and its namespace) against a rule's selection. */
export interface Selection {
  /** False when the rule names namespaces and this is not one of them. */
  inNamespace(namespace: string | undefined, namespaceLabels: NamespaceLabels | undefined): boolean;
  selects(object: Selectable): boolean;
  /** Does the rule select by the namespace's labels (so namespace labels must be known)? */
  readonly byNamespaceLabels: boolean;
  readonly keys: SelectionKeys;
}

/** Label and annotation keys a selection reads: what an untrusted write may not move. */
export interface SelectionKeys {
  labelKeys: string[];
  annotationKeys: string[];
}

const selectorKeys = (s: MapSelector | undefined) => [...new Set([...Object.keys(s?.matches ?? {}), ...(s?.matchExpressions ?? []).map((r) => r.key)])];

export function compileSelection(rule: ResourceRuleConfig): Selection {
  const named = rule.namespaces ? new Set(rule.namespaces) : undefined;
  const namespaceMatches = rule.namespaceSelector ? mapMatcher(asMapSelector(rule.namespaceSelector)) : undefined;
  const labels = mapMatcher(asMapSelector(rule.labelSelector));
  const annotations = mapMatcher(fromAnnotations(rule.annotationSelector));
  const name = rule.names ? new RegExp(namePatternRegex(rule.names)) : undefined;
  return {
    byNamespaceLabels: Boolean(namespaceMatches),
    keys: { labelKeys: selectorKeys(asMapSelector(rule.labelSelector)), annotationKeys: selectorKeys(fromAnnotations(rule.annotationSelector)) },
    inNamespace(namespace, namespaceLabels) {
      if (named && !named.has(namespace ?? '')) return false;
      if (!namespaceMatches) return true;
      if (!namespace) return false;
      const known = namespaceLabels?.(namespace);
      return known === undefined || namespaceMatches(known);
    },
    selects(object) {
      // A create by generateName has no name yet at mutation: it may become one that matches.
      if (name && object.name && !name.test(object.name)) return false;
      return labels(object.labels) && annotations(object.annotations);
    },
  };
}

const escapeToken = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Patch operations that put back, from `old`, the selector's label and annotation keys that
 * `object` changed: the object stays in the selection it was in (rewrite mode, reverts).
 */
export function selectionRestoreOps(keys: SelectionKeys, old: Selectable, object: Selectable): PatchOp[] {
  const ops: PatchOp[] = [];
  const restore = (field: 'labels' | 'annotations', keys: string[]) => {
    const before = old[field] ?? {};
    const now = object[field];
    const differing = keys.filter((k) => before[k] !== now?.[k]);
    if (!differing.length) return;
    if (!now) {
      const value = Object.fromEntries(differing.filter((k) => Object.hasOwn(before, k)).map((k) => [k, before[k]!]));
      if (Object.keys(value).length) ops.push({ op: 'add', path: `/metadata/${field}`, value });
      return;
    }
    for (const k of differing) {
      const path = `/metadata/${field}/${escapeToken(k)}`;
      if (Object.hasOwn(before, k)) ops.push({ op: Object.hasOwn(now, k) ? 'replace' : 'add', path, value: before[k] });
      else ops.push({ op: 'remove', path });
    }
  };
  restore('labels', keys.labelKeys);
  restore('annotations', keys.annotationKeys);
  return ops;
}
