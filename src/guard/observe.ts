import type { KubeObject } from '../kube/types.js';
import { attributeChange, laterRevision, type Attribution, type Layers } from './attribution.js';
import { entryValues, type CanonicalEntry, type Tombstone } from './canonical-entry.js';
import { isFresh } from './freshness.js';
import type { Rule } from './policy.js';
import { nextSeq, STAMP_ANNOTATION, type Stamper } from './stamp.js';
import { TooDeepError } from './canonical-json.js';
import type { View } from './guarded-view.js';
import { getAt, parsePointer, setAt } from './pointer.js';
import { equalForCel } from './cel-equality.js';
import { packValues } from './packed-values.js';

/** What the watcher makes of one observed version of a guarded object. */
export type Observation =
  /** A valid, fresh stamp: this version defines the canonical value. */
  | { kind: 'learn'; entry: CanonicalEntry }
  /** Equal to the canonical value (`restoreStamp`: only the stamp was touched). */
  | { kind: 'in-sync'; entry: CanonicalEntry; restoreStamp: boolean }
  /**
   * Differs from the canonical value (or none is known) and carries no fresh stamp: who
   * made it is for attribution by continuity to say (see `resolve`). `entry` is the
   * canonical value of this very copy (same uid), `previous` that of the key.
   */
  | { kind: 'changed'; entry: CanonicalEntry | undefined; previous: CanonicalEntry | undefined; changed: string[]; viewHash: string }
  /**
   * Nests deeper than a guard can compare (never canonical): reverted to the known value
   * unless attribution says a trusted writer wrote it, which then cannot be guarded.
   */
  | { kind: 'too-deep'; entry: CanonicalEntry; changed: string[] }
  | { kind: 'unknown' }
  | { kind: 'ignore' };

/**
 * Most a canonical entry keeps of an object's annotations (JSON bytes, the stamp aside): they
 * are not guarded, anyone may write them, and each entry is stored and held in memory.
 */
export const MAX_KEPT_ANNOTATION_BYTES = 16 * 1024;

/** Annotations a recreated object gets back: all but kubectl's client-side bookkeeping, within the budget. */
function keptAnnotations(object: KubeObject, stamp: string): Record<string, string> {
  const { 'kubectl.kubernetes.io/last-applied-configuration': _lastApplied, [STAMP_ANNOTATION]: _stamp, ...rest } = object.metadata?.annotations ?? {};
  const kept: Record<string, string> = {};
  let bytes = 0;
  for (const [key, value] of Object.entries(rest)) {
    bytes += key.length + value.length + 6;
    if (bytes > MAX_KEPT_ANNOTATION_BYTES) break;
    kept[key] = value;
  }
  return { ...kept, [STAMP_ANNOTATION]: stamp };
}

/** `known` where it holds the same as `value`: one copy kept instead of two. */
const shared = <T>(value: T, known: T | undefined): T => (known !== undefined && JSON.stringify(known) === JSON.stringify(value) ? known : value);

/**
 * The entry `object` defines. Where it holds what `previous` holds (the same value seen again:
 * every status update of a stamped object), the strings and maps are `previous`'s own, so that
 * a store's copy of the entry and the cache's do not each hold a copy of the value.
 */
function entryFrom(object: KubeObject, rule: Rule, viewHash: string, stamp: string, seq: number, previous: CanonicalEntry | undefined): CanonicalEntry {
  const meta = object.metadata ?? {};
  const valuesJson = JSON.stringify(rule.view.valuesOf(object));
  // Labels and annotations are learned from a trusted write only (a new stamp): the same
  // stamp seen again with other metadata is anyone's later edit, not the source of truth's.
  const sameWrite = previous !== undefined && previous.stamp === stamp;
  const labels = sameWrite ? previous.labels : meta.labels;
  const annotations = sameWrite ? previous.annotations : keptAnnotations(object, stamp);
  return {
    viewHash,
    valuesJson: packValues(valuesJson, previous?.valuesJson),
    stamp: previous?.stamp === stamp ? previous.stamp : stamp,
    seq,
    resourceVersion: meta.resourceVersion ?? '',
    knownAt: meta.resourceVersion ?? '',
    uid: meta.uid ?? '',
    apiVersion: object.apiVersion ?? '',
    kind: object.kind ?? '',
    labels: shared(labels, previous?.labels),
    annotations: shared(annotations, previous?.annotations),
    view: rule.view.id,
  };
}

/**
 * An entry learned under another set of guarded pointers (an upgrade that names new doors:
 * /operation, the finalizers) knows nothing of the pointers new to the view. They are taken
 * from the object as it stands, as a first observation would, instead of being compared with
 * "absent": otherwise the first relist after the upgrade would strip every finalizer and
 * operation as drift. Undefined when the entry is of this view.
 */
function adoptNewDoors(previous: CanonicalEntry, object: KubeObject, rule: Rule, key: string, stamper: Stamper): CanonicalEntry | undefined {
  if (previous.view === rule.view.id) return undefined;
  const values = entryValues(previous);
  const canonical: Record<string, unknown> = {};
  for (const pointer of rule.view.pointers) {
    const value = Object.hasOwn(values, pointer) ? values[pointer] : getAt(object, parsePointer(pointer));
    if (value !== undefined) setAt(canonical, parsePointer(pointer), value);
  }
  const viewHash = rule.view.of(canonical).hash;
  const seq = previous.seq ?? 0;
  return { ...previous, viewHash, valuesJson: packValues(JSON.stringify(rule.view.valuesOf(canonical))), stamp: stamper.stamp(viewHash, key, seq), seq, view: rule.view.id };
}

/**
 * Classifies one version of a guarded object, as the design's "Trust and provenance" says:
 * a valid and fresh stamp makes it canonical; equal to the canonical value is in sync;
 * anything else is a change for attribution to judge. managedFields play no part: any
 * writer sets them. Pure: no I/O.
 */
export function observe(
  object: KubeObject,
  rule: Rule,
  key: string,
  previous: CanonicalEntry | undefined,
  tombstone: Tombstone | undefined,
  stamper: Stamper,
): Observation {
  if (object.metadata?.deletionTimestamp) return { kind: 'ignore' };
  let view: View;
  try {
    view = rule.view.of(object);
  } catch (err) {
    if (!(err instanceof TooDeepError)) throw err;
    // Nothing this deep was ever canonical (canonical values were serialized): compared with a
    // known canonical value, restored from it without reading the deep value again.
    return previous ? { kind: 'too-deep', entry: previous, changed: rule.view.pointers } : { kind: 'unknown' };
  }
  const meta = object.metadata ?? {};
  const stamp = meta.annotations?.[STAMP_ANNOTATION];
  // The stamped value seen again on the same copy (a status update, a relist, a revert coming
  // back): in sync, as learning it again would conclude, without reading the stamp or
  // building a new entry. A tombstone or an entry of another view takes the long way.
  if (previous && !tombstone && stamp === previous.stamp && previous.seq !== undefined && previous.view === rule.view.id && previous.viewHash === view.hash && (!previous.uid || previous.uid === meta.uid)) {
    return { kind: 'in-sync', entry: inSync(previous, object), restoreStamp: false };
  }
  const claim = stamper.read(stamp, key);
  if (claim && claim.hash === view.hash && isFresh(claim, object, previous, tombstone)) {
    return { kind: 'learn', entry: entryFrom(object, rule, view.hash, stamp!, claim.seq, previous) };
  }
  const adopted = previous && adoptNewDoors(previous, object, rule, key, stamper);
  if (adopted) {
    // Learned anew (and stored) when the object holds it; otherwise compared with it below.
    if (adopted.viewHash === view.hash) return { kind: 'learn', entry: { ...adopted, resourceVersion: meta.resourceVersion ?? '', uid: meta.uid ?? adopted.uid } };
    previous = adopted;
  }
  if (previous && previous.viewHash === view.hash) return { kind: 'in-sync', entry: inSync(previous, object), restoreStamp: stamp !== previous.stamp };
  const sameCopy = previous && (!previous.uid || previous.uid === meta.uid) ? previous : undefined;
  const changed = previous ? rule.view.changedPointers(entryValues(previous), object) : rule.view.pointers;
  return { kind: 'changed', entry: sameCopy, previous, changed, viewHash: view.hash };
}

/** `previous` as held by this version of the object: its uid and revision, known canonical as of it (never earlier than before). */
function inSync(previous: CanonicalEntry, object: KubeObject): CanonicalEntry {
  const rv = object.metadata?.resourceVersion ?? '';
  return { ...previous, uid: object.metadata?.uid ?? previous.uid, resourceVersion: rv, knownAt: laterRevision(previous.knownAt ?? previous.resourceVersion, rv) };
}

/** In warn mode untrusted writers are admitted: the guard layer vouches for nothing. */
const warnAware = (rule: Rule, layers: Layers): Layers => (rule.mode === 'warn' ? { ...layers, guard: { intact: false } } : layers);

/**
 * Who made the stored object's difference from the canonical value `previous`, by continuity.
 * The guard layer does not vouch for a change its CEL cannot see (a number rewritten as an
 * equal double). `sameCopy`: the canonical value of this very copy (same uid), if known.
 */
export function attributeStored(rule: Rule, previous: CanonicalEntry, object: KubeObject, layers: Layers, sameCopy: CanonicalEntry | undefined = !previous.uid || previous.uid === object.metadata?.uid ? previous : undefined): Attribution {
  const effective = invisibleToPolicy(rule, previous, object) ? { ...layers, guard: { intact: false } } : warnAware(rule, layers);
  return attributeChange(effective, sameCopy, object, rule.config.creates === 'allow');
}

/** Do the guarded values differ from the canonical ones only where CEL sees no difference? */
function invisibleToPolicy(rule: Rule, previous: CanonicalEntry, object: KubeObject): boolean {
  const before = entryValues(previous);
  const after = rule.view.valuesOf(object);
  return rule.view.pointers.every((p) => equalForCel(before[p], after[p]));
}

/** What the watcher does with a change that carries no fresh stamp, once attributed. */
export type ChangePlan =
  /** `consumed`: the consumer removed what it acted on (an operation it ran). */
  | { action: 'learn'; entry: CanonicalEntry; attribution: Attribution; consumed?: boolean }
  | { action: 'revert'; entry: CanonicalEntry; attribution: Attribution }
  | { action: 'leave'; attribution: Attribution };

/**
 * Attribution by continuity, then the rule's choice for what no layer vouches for. A
 * trusted change is learned and stamped anew (a sequence after every one seen); an
 * untrusted one is reverted to the canonical value; an unattributed one follows the rule's
 * `blindWindow.changes`. Pure: `now` is passed in.
 */
export function resolve(
  obs: Extract<Observation, { kind: 'changed' }>,
  object: KubeObject,
  rule: Rule,
  key: string,
  layers: Layers,
  stamper: Stamper,
  now: number,
): ChangePlan {
  const attribution = obs.previous ? attributeStored(rule, obs.previous, object, layers, obs.entry) : attributeChange(warnAware(rule, layers), obs.entry, object, rule.config.creates === 'allow');
  const learn = (consumed?: boolean): ChangePlan => {
    const seq = nextSeq(now, obs.previous?.seq);
    return { action: 'learn', entry: entryFrom(object, rule, obs.viewHash, stamper.stamp(obs.viewHash, key, seq), seq, obs.previous), attribution, consumed };
  };
  if (attribution === 'trusted') return learn();
  // The consumer's removal of what it acted on (an operation it ran) is never undone, whoever
  // made it: restoring it would act again (docs/decisions.md, "What each writer owns").
  if (obs.previous && obs.changed.length && obs.changed.every((p) => rule.ownership.consumedAway(p, object))) return learn(true);
  if (attribution === 'unattributed' && rule.config.blindWindow.changes === 'accept') return learn();
  return obs.previous ? { action: 'revert', entry: obs.previous, attribution } : { action: 'leave', attribution };
}
