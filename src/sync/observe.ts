import type { KubeObject } from '../webhook/admission-types.js';
import { entryValues, type CanonicalEntry } from './cache.js';
import type { Rule } from './policy.js';
import { lastGuardedWriter } from './provenance.js';
import { STAMP_ANNOTATION, type Stamper } from './stamp.js';
import { TooDeepError } from './canonical-json.js';
import type { View } from './guarded-view.js';

/** What the watcher makes of one observed version of a guarded object. */
export type Observation =
  /** Trusted: this version defines the canonical value (`restamp`: its stamp must be set). */
  | { kind: 'learn'; entry: CanonicalEntry; restamp: boolean }
  /** Equal to the canonical value (`restoreStamp`: only the stamp was touched). */
  | { kind: 'in-sync'; entry: CanonicalEntry; restoreStamp: boolean }
  | { kind: 'drift'; entry: CanonicalEntry; changed: string[]; by: string | undefined }
  /** Nothing vouches for this version and no canonical value is known. */
  | { kind: 'unknown'; by: string | undefined }
  | { kind: 'ignore' };

/** Annotations a recreated object gets back: all but kubectl's client-side bookkeeping. */
function keptAnnotations(object: KubeObject): Record<string, string> | undefined {
  const { 'kubectl.kubernetes.io/last-applied-configuration': _lastApplied, ...rest } = object.metadata?.annotations ?? {};
  return Object.keys(rest).length ? rest : undefined;
}

function entryFrom(object: KubeObject, rule: Rule, viewHash: string, stamp: string): CanonicalEntry {
  const meta = object.metadata ?? {};
  return {
    viewHash,
    valuesJson: JSON.stringify(rule.view.valuesOf(object)),
    stamp,
    resourceVersion: meta.resourceVersion ?? '',
    uid: meta.uid ?? '',
    apiVersion: object.apiVersion ?? '',
    kind: object.kind ?? '',
    labels: meta.labels,
    annotations: keptAnnotations({ ...object, metadata: { ...meta, annotations: { ...meta.annotations, [STAMP_ANNOTATION]: stamp } } }),
  };
}

/**
 * Classifies one version of a guarded object, as the design's "Trust and provenance"
 * says: a valid stamp makes it canonical; so does an unstamped change whose last writer
 * of the guarded paths is a trusted field manager (it is then re-stamped); anything else
 * that differs from the canonical value is drift. Pure: no I/O.
 */
export function observe(
  object: KubeObject,
  rule: Rule,
  key: string,
  entry: CanonicalEntry | undefined,
  stamper: Stamper,
  trustedManagers: ReadonlySet<string>,
): Observation {
  if (object.metadata?.deletionTimestamp) return { kind: 'ignore' };
  let view: View;
  try {
    view = rule.view.of(object);
  } catch (err) {
    if (!(err instanceof TooDeepError)) throw err;
    // Nothing this deep was ever canonical (canonical values were serialized): drift when a
    // canonical value is known, restored from it without reading the deep value again.
    return entry ? { kind: 'drift', entry, changed: rule.view.pointers, by: undefined } : { kind: 'unknown', by: undefined };
  }
  const stamp = object.metadata?.annotations?.[STAMP_ANNOTATION];
  if (stamp && stamper.verify(stamp, key) === view.hash) return { kind: 'learn', entry: entryFrom(object, rule, view.hash, stamp), restamp: false };
  if (entry && entry.viewHash === view.hash) {
    return { kind: 'in-sync', entry: { ...entry, resourceVersion: object.metadata?.resourceVersion ?? '' }, restoreStamp: stamp !== entry.stamp };
  }
  const writer = lastGuardedWriter(object.metadata?.managedFields, rule.view.pointers, trustedManagers);
  if (writer.trusted) {
    return { kind: 'learn', entry: entryFrom(object, rule, view.hash, stamper.stamp(view.hash, key)), restamp: true };
  }
  if (!entry) return { kind: 'unknown', by: writer.manager };
  return { kind: 'drift', entry, changed: rule.view.changedPointers(entryValues(entry), object), by: writer.manager };
}
