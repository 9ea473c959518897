import type { KubeObject } from '../kube/index.js';
import type { Target } from './repairer.js';

/** One version of one object, waiting to be handled. */
export interface Pending {
  target: Target;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubeObject;
  seenAt: number;
  /** Handled before without success this many times. */
  attempt: number;
  /** For an object from a list: the list's revision, as of which what it shows holds. */
  listedAt?: string;
  /** From a list after an admission layer came into force: store the revision it is known canonical at. */
  storeListed: boolean;
  /** Read the object again first: it changed since this was decided. */
  stale?: boolean;
  /** The version the watch showed of the object just before this one, when known (shown-version.ts). */
  follows?: string;
}

/**
 * What reading the object again means for a work item: no version decided yet, nothing a list
 * vouched for, no version known to precede the one a read returns (it may be several writes on).
 */
export const READ_AGAIN = { stale: true, listedAt: undefined, storeListed: false, follows: undefined } as const;

/**
 * A planned revert needs of its version only what names it (the PATCH's resourceVersion test,
 * the Event's object). The rest is let go before the PATCH: in a burst a revert waits for the
 * apiserver for up to a second, long enough for the whole object (and its managedFields) to be
 * promoted to the old generation, which a major GC then has to collect (one or two a second
 * in bench:revert's bursts). The work item is changed in place: the queue holds it for a retry
 * too. A retry reads the object again, as a conflict does: the version it was planned on may
 * be gone by then.
 */
export function releaseVersion(work: Pending): void {
  const { apiVersion, kind, metadata } = work.object;
  const identity = { apiVersion, kind, metadata: { name: metadata?.name, namespace: metadata?.namespace, uid: metadata?.uid, resourceVersion: metadata?.resourceVersion } };
  Object.assign(work, READ_AGAIN, { object: identity });
}
