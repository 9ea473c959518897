import type { KubeObject } from '../kube/index.js';

/**
 * What the watcher's informer keeps of each object: the version last shown, and the version the
 * watch showed of it just before that one (`follows`), when known. A watch shows every write of
 * an object, in order; so a version the watch shows follows the one shown before it, with no
 * write between them (guard's heldUntilWrite builds on that).
 */
export interface ShownVersion {
  version: string;
  follows?: string;
}

/** A key known (from the store) whose versions the watch has not shown yet: one value for all of them. */
export const NOT_SHOWN: ShownVersion = Object.freeze({ version: '' });

/**
 * The informer's projection. A list shows no order: after a gap in the watch (410 Gone, a
 * restart) the version it shows may be several writes on, so it follows nothing known. Unless
 * it is the very version shown before: then what that one followed still holds (a write made on
 * top of a version stays made on top of it), and a relist that overtakes a watch event waiting
 * in the queue (newest wins) keeps it.
 */
export function shownVersion(object: KubeObject, previous: ShownVersion | undefined, listed: boolean): ShownVersion {
  const version = object.metadata?.resourceVersion ?? '';
  if (listed) return previous && previous.version === version ? previous : { version };
  return { version, follows: previous?.version || undefined };
}
