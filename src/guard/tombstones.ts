import type { Tombstone } from './canonical-entry.js';

/**
 * Tombstones: a trusted DELETE admitted by spec-guard records one so that the watcher does
 * not recreate the object when it sees it go. A review body is not proof (anyone who
 * reaches the webhook port can post one), so a tombstone only counts for the object with
 * its uid, and only until the watch, watching throughout, has gone CONFIRM_MS past it
 * without seeing that delete. A confirmed one is kept as long (once the removal of the
 * object's canonical entry is stored): stamps issued before it are stale on a recreated copy.
 * Pure rules; the stores and the watcher apply them.
 */
export const TOMBSTONE_CONFIRM_MS = 10_000;
/**
 * At most this many are kept. A trusted delete is never refused for room: past the budget the
 * oldest that no finalizer holds give way (a flood of forged reviews, possible only where
 * reviews are not authenticated, cannot lock the source of truth out of deleting).
 */
export const MAX_TOMBSTONES = 2000;
/**
 * And at most this many bytes of them as JSON: one Secret holds them all (1 MiB, base64 takes
 * a third more), and each write rewrites it, so a flood of long forged names is bounded too.
 */
export const MAX_TOMBSTONE_BYTES = 512 * 1024;

/** A tombstone's share of the stored JSON map: `"key":{…},`. */
const sizeOf = (key: string, tombstone: Tombstone) => key.length + JSON.stringify(tombstone).length + 4;
/** Past this age a tombstone is dropped whatever happened: every store stays bounded. */
export const TOMBSTONE_MAX_AGE_MS = 60 * 60_000;
/**
 * The apiserver names every object by an RFC 4122 UUID it generated: a review whose old
 * object has any other uid is not from it (and a forged 128-character uid would cost bytes).
 */
const APISERVER_UID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The tombstone a trusted DELETE review records, at `nowMs`; throws for a review no apiserver sends. */
export function tombstoneOf(oldObjectUid: string | undefined, nowMs: number): Tombstone {
  // An apiserver's DELETE review always carries the old object: one without is not from it.
  if (!oldObjectUid) throw new Error('a DELETE review without the old object (its uid) is not from a kube-apiserver');
  if (!APISERVER_UID.test(oldObjectUid)) throw new Error('a DELETE review whose old object has no apiserver uid (a UUID) is not from a kube-apiserver');
  return { uid: oldObjectUid, at: new Date(nowMs).toISOString() };
}

/** Does `tombstone` vouch for the delete of the object with `uid`? */
export function confirms(tombstone: Tombstone | undefined, uid: string | undefined): boolean {
  // A tombstone names the uid it was recorded for (an apiserver's DELETE review always carries
  // the old object): one without confirms nothing, so a forged review cannot cover every copy.
  return tombstone?.uid !== undefined && (uid === undefined || tombstone.uid === uid);
}

/**
 * Has the watch, continuously up since `watchingSinceMs`, gone past the tombstone's window
 * without seeing its delete? A watch that restarted meanwhile may have missed it: keep it.
 * `firstSeenMs`: when the judging replica first saw the tombstone, by its own clock; its age
 * counts from there, so that a writer's clock running ahead (or behind) moves nothing.
 */
export function expired(tombstone: Tombstone, nowMs: number, watchingSinceMs: number, firstSeenMs = Date.parse(tombstone.at)): boolean {
  const seen = Number.isFinite(firstSeenMs) ? firstSeenMs : nowMs;
  if (!(nowMs - seen <= TOMBSTONE_MAX_AGE_MS)) return true;
  // The delete happened before it was first seen, by at most a window (a writer's clock that
  // says earlier is not believed): the watch must have run throughout since then.
  const at = Date.parse(tombstone.at);
  const since = Math.min(seen, Math.max(Number.isFinite(at) ? at : seen, seen - TOMBSTONE_CONFIRM_MS));
  return watchingSinceMs < since && nowMs - seen > TOMBSTONE_CONFIRM_MS;
}

/**
 * `current` with `changes` applied (null removes), over-age ones dropped; past the budget (count
 * or bytes), the oldest not held by a finalizer and not added by these changes give way
 * (returned as evicted).
 */
export function applyTombstoneChanges(
  current: Map<string, Tombstone>,
  changes: ReadonlyMap<string, Tombstone | null>,
  nowMs: number,
): { next: Map<string, Tombstone>; evicted: string[] } {
  const next = new Map<string, Tombstone>();
  for (const [key, tombstone] of current) if (nowMs - Date.parse(tombstone.at) <= TOMBSTONE_MAX_AGE_MS) next.set(key, tombstone);
  for (const [key, change] of changes) {
    if (change === null) next.delete(key);
    else next.set(key, change);
  }
  const evicted: string[] = [];
  let bytes = 0;
  for (const [key, tombstone] of next) bytes += sizeOf(key, tombstone);
  if (next.size <= MAX_TOMBSTONES && bytes <= MAX_TOMBSTONE_BYTES) return { next, evicted };
  const yielding = [...next].filter(([key, t]) => !t.held && !changes.has(key)).sort(([, a], [, b]) => Date.parse(a.at) - Date.parse(b.at));
  for (const [key, tombstone] of yielding) {
    if (next.size <= MAX_TOMBSTONES && bytes <= MAX_TOMBSTONE_BYTES) break;
    next.delete(key);
    bytes -= sizeOf(key, tombstone);
    evicted.push(key);
  }
  return { next, evicted };
}
