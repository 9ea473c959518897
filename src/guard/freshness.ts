import type { KubeObject } from '../kube/types.js';
import type { CanonicalEntry, Tombstone } from './canonical-entry.js';
import type { StampClaim } from './stamp.js';
import { TOMBSTONE_CONFIRM_MS } from './tombstones.js';

/**
 * How much earlier than the object's creation (apiserver clock) a stamp may have been issued
 * (spec-guard's clock) and still be fresh. Equal to the time a confirmed tombstone is kept,
 * so that a copy recreated from a saved one is caught by one rule or the other: within it by
 * the tombstone, after it by its creation time. A clock more than this behind the
 * apiserver's makes fresh stamps of new objects look stale: attribution then decides.
 */
export const CREATION_SKEW_MS = TOMBSTONE_CONFIRM_MS;

/**
 * Is a valid stamp the newest trusted write of this object? Not when the canonical value
 * already has a newer one (an older spec written back with its older stamp), nor when it
 * was issued before a trusted delete of the object or long before this copy was created
 * (a deleted object recreated from a saved copy, stamp included). Pure.
 */
export function isFresh(claim: StampClaim, object: KubeObject, entry: CanonicalEntry | undefined, tombstone: Tombstone | undefined): boolean {
  const uid = object.metadata?.uid;
  if (entry) {
    const sameCopy = !entry.uid || !uid || entry.uid === uid;
    const known = entry.seq ?? 0;
    if (sameCopy ? claim.seq < known : claim.seq <= known) return false;
  }
  if (tombstone && tombstone.uid !== uid && claim.seq <= Date.parse(tombstone.at)) return false;
  const created = Date.parse(object.metadata?.creationTimestamp ?? '');
  return !(claim.seq < created - CREATION_SKEW_MS);
}
