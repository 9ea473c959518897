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
/** At most this many wait for confirmation; a further trusted delete is refused (and retried by its writer). */
export const MAX_TOMBSTONES = 2000;
/** Past this age a tombstone is dropped whatever happened: every store stays bounded. */
export const TOMBSTONE_MAX_AGE_MS = 60 * 60_000;

export class TombstoneBudgetError extends Error {
  constructor() {
    super(`${MAX_TOMBSTONES} deletes are already waiting for the watch to confirm them; retry in a few seconds`);
  }
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
 */
export function expired(tombstone: Tombstone, nowMs: number, watchingSinceMs: number): boolean {
  const at = Date.parse(tombstone.at);
  if (!(nowMs - at <= TOMBSTONE_MAX_AGE_MS)) return true;
  return watchingSinceMs < at && nowMs - at > TOMBSTONE_CONFIRM_MS;
}

/** `current` with `changes` applied (null removes), over-age ones dropped; throws past the budget. */
export function applyTombstoneChanges(current: Map<string, Tombstone>, changes: ReadonlyMap<string, Tombstone | null>, nowMs: number): Map<string, Tombstone> {
  const next = new Map<string, Tombstone>();
  for (const [key, tombstone] of current) if (nowMs - Date.parse(tombstone.at) <= TOMBSTONE_MAX_AGE_MS) next.set(key, tombstone);
  for (const [key, change] of changes) {
    if (change === null) next.delete(key);
    else next.set(key, change);
  }
  if (next.size > MAX_TOMBSTONES && [...changes.values()].some((c) => c !== null)) throw new TombstoneBudgetError();
  return next;
}
