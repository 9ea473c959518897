import type { KubeObject } from '../kube/types.js';
import type { CanonicalEntry } from './canonical-entry.js';

/** One admission layer's continuity, as last verified against the apiserver. */
export interface LayerState {
  /** Registered as spec-guard renders it, unchanged since `since`. */
  intact: boolean;
  /** etcd revision from which the layer has been in force without a gap. */
  since?: string;
  /** The apiserver's clock at `since` (ms), for objects created later. */
  sinceTime?: number;
  /**
   * The periods the layer was verified in force, ended ones included (the guard layer's): a
   * change made within one, to a copy known canonical at its start, stays attributed after
   * the period ended.
   */
  verified?: Period[];
}

/** Revisions over which a layer was verified in force: from `since` (apiserver time `sinceTime`) up to `until`. */
export interface Period {
  since: string;
  sinceTime: number;
  until: string;
}

/**
 * The three layers continuity speaks for. `guard`: the fail-closed layer (the admission
 * policy, or the validating guard webhook without it): no untrusted guarded change or delete
 * gets through it, even with every replica down. `stamp`: the mutating webhook, with this
 * replica serving: every trusted write gets stamped. `tombstone`: the validating webhook
 * (fail-closed for trusted deletes): every trusted delete records a tombstone.
 */
export interface Layers {
  guard: LayerState;
  stamp: LayerState;
  tombstone: LayerState;
}

/** One admission object as spec-guard last verified it in force: a new uid or resourceVersion ends the period. */
export interface LayerRecord {
  uid: string;
  resourceVersion: string;
  since: string;
  sinceTime: number;
  /** The latest revision this version was verified in force at: one read before a GET found it unchanged. */
  verifiedAt?: string;
  /** The periods of the versions before it, newest first (a few: enough to outlast a blind window and a restart). */
  earlier?: Period[];
}

/** Per admission object kind: what the store remembers, so that continuity survives restarts. */
export type ContinuityRecord = Record<string, LayerRecord>;

/** Who made a change that carries no fresh stamp. */
export type Attribution = 'trusted' | 'untrusted' | 'unattributed';

/** A created object's creationTimestamp has one-second resolution: this much after `sinceTime` it is surely later. */
const CREATION_MARGIN_MS = 2000;

/** An etcd revision as a number; anything else is none (and vouches for nothing). */
export const revision = (rv: string | undefined): bigint | undefined => (rv && /^\d{1,20}$/.test(rv) ? BigInt(rv) : undefined);

/** The later of two revisions; a revision that is not a number sorts last, so nothing is covered by it. */
export function laterRevision(a: string, b: string): string {
  const x = revision(a);
  const y = revision(b);
  if (x === undefined) return a;
  if (y === undefined) return b;
  return x >= y ? a : b;
}

/** Was the layer in force, without a gap, from `knownAt` (a revision) until now? */
function coversSince(layer: LayerState, knownAt: string | undefined): boolean {
  const since = revision(layer.since);
  const known = revision(knownAt);
  return layer.intact && since !== undefined && known !== undefined && known >= since;
}

/** Was the layer in force, without a gap, from before the object was created until now? */
function coversCreation(layer: LayerState, object: KubeObject): boolean {
  const created = Date.parse(object.metadata?.creationTimestamp ?? '');
  return layer.intact && layer.sinceTime !== undefined && created >= layer.sinceTime + CREATION_MARGIN_MS;
}

/** The verified periods that hold the object's last write (its resourceVersion, which the apiserver sets). */
function periodsHolding(layer: LayerState, object: KubeObject): Period[] {
  const written = revision(object.metadata?.resourceVersion);
  if (written === undefined) return [];
  return (layer.verified ?? []).filter((p) => {
    const until = revision(p.until);
    return until !== undefined && written <= until;
  });
}

/** Was the layer verified in force over every write since `knownAt`, within one period (ended or not)? */
function coversWithin(layer: LayerState, knownAt: string | undefined, object: KubeObject): boolean {
  const known = revision(knownAt);
  return (
    known !== undefined &&
    periodsHolding(layer, object).some((p) => {
      const since = revision(p.since);
      return since !== undefined && since <= known;
    })
  );
}

/** Was the object created and last written within one verified period (ended or not)? */
function createdWithin(layer: LayerState, object: KubeObject): boolean {
  const created = Date.parse(object.metadata?.creationTimestamp ?? '');
  return periodsHolding(layer, object).some((p) => created >= p.sinceTime + CREATION_MARGIN_MS);
}

const knownAt = (entry: CanonicalEntry) => entry.knownAt ?? entry.resourceVersion;

/**
 * `entry` as a watch without a gap knows it. `follows`: the version the watch showed of the
 * object just before `object` (each write makes one, and a watch shows them all, in order).
 * When that version was the entry's own (it held the canonical value), nothing was written to
 * the object between the two: it held the canonical value up to the revision before this
 * version's write, and attribution asks about that one write alone. Without this, a copy last
 * known canonical before a period began (its relist not reached yet) had its next write, made
 * within the period, judged over every revision since (round 8's gap). Pure.
 */
export function heldUntilWrite(entry: CanonicalEntry | undefined, object: KubeObject, follows: string | undefined): CanonicalEntry | undefined {
  const written = revision(object.metadata?.resourceVersion);
  const before = revision(follows);
  if (!entry || written === undefined || before === undefined || before >= written) return entry;
  if (entry.resourceVersion !== follows || !entry.uid || entry.uid !== object.metadata?.uid) return entry;
  return { ...entry, knownAt: laterRevision(knownAt(entry), String(written - 1n)) };
}

/**
 * Attribution by continuity of an unstamped guarded change (or one whose stamp is stale).
 * `entry` is the canonical value of this very copy (same uid), if known. Nothing an
 * untrusted writer can write takes part: only the layers' identity and revisions as the
 * apiserver reports them, the object's revision and creation time. Pure.
 */
export function attributeChange(layers: Layers, entry: CanonicalEntry | undefined, object: KubeObject, untrustedCreatesAllowed: boolean): Attribution {
  if (entry) {
    // The guard layer refused every untrusted change since the copy was last canonical: it
    // holds until now, or held over every write since (the object's revision is its last).
    if (coversSince(layers.guard, knownAt(entry)) || coversWithin(layers.guard, knownAt(entry), object)) return 'trusted';
    // Every trusted write since then was stamped: an unstamped one is not one of them.
    if (coversSince(layers.stamp, knownAt(entry))) return 'untrusted';
    return 'unattributed';
  }
  if (!untrustedCreatesAllowed && (coversCreation(layers.guard, object) || createdWithin(layers.guard, object))) return 'trusted';
  if (coversCreation(layers.stamp, object)) return 'untrusted';
  return 'unattributed';
}

/**
 * Attribution of a delete that recorded no tombstone. Pure. Ended periods play no part: when a
 * delete was made is not known (a relist sees only that the object is gone).
 */
export function attributeDelete(layers: Layers, entry: CanonicalEntry): Attribution {
  if (coversSince(layers.guard, knownAt(entry))) return 'trusted';
  if (coversSince(layers.tombstone, knownAt(entry))) return 'untrusted';
  return 'unattributed';
}

/** Layers as a replica that verified nothing (a follower, `status` without a cluster) sees them. */
export const UNKNOWN_LAYERS: Layers = { guard: { intact: false }, stamp: { intact: false }, tombstone: { intact: false } };
