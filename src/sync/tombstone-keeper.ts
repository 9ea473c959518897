import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import { confirms, expired, objectKey, parseObjectKey, reviewedName, TOMBSTONE_CONFIRM_MS, tombstoneOf, type Tombstone } from '../guard/index.js';
import { coalesce, type AdmissionRequest } from '../kube/index.js';
import type { CanonicalCache } from './cache.js';
import type { CanonicalStore } from './store/index.js';

/**
 * The admission side: a trusted delete is recorded durably (the store) and at once (this
 * replica's cache) before it is admitted; admitted without, the object would be recreated.
 */
export const tombstoneRecorder = (cache: CanonicalCache, store: CanonicalStore) => async (req: AdmissionRequest): Promise<void> => {
  const key = objectKey(req.resource.group, req.resource.resource, req.namespace, reviewedName(req));
  const tombstone = tombstoneOf(req.oldObject?.metadata?.uid, Date.now());
  cache.recordTombstone(key, tombstone);
  await store.addTombstone(key, tombstone);
};

export interface TombstoneKeeperDeps {
  cache: CanonicalCache;
  store: CanonicalStore;
  metrics: Metrics;
  logger: Logger;
  /** True while the key's canonical entry has changes not stored yet. */
  unsaved: (key: string) => boolean;
  /** Since when the watch of a group/resource has run without a restart. */
  watchingSince: (groupResource: string) => number | undefined;
}

/**
 * The watch side of tombstones: which deletes the watch saw begin (a finalizer at work),
 * which tombstone a delete the watch saw had (this replica's, or another's from the store),
 * and the leader's sweep of those the watch went past without seeing their delete.
 */
export class TombstoneKeeper {
  /**
   * Guarded objects the watch saw terminating, by key: uid. Their tombstone is kept until the
   * delete completes, however long the finalizer takes (bounded by the maximum age), and
   * marked held, so that no flood of other deletes evicts it. One entry per terminating object.
   */
  private readonly terminating = new Map<string, string>();
  /**
   * When this replica first saw each tombstone, by its own clock: another replica's clock wrote
   * `at`, and one running ahead would otherwise keep a forged tombstone longer. Bounded by the
   * tombstones.
   */
  private readonly firstSeen = new Map<string, number>();

  /** Set while this replica leads (lead() and follow()): only the leader sweeps and marks. */
  private sweepTimer: NodeJS.Timeout | undefined;

  /**
   * The store's tombstones, read once for every lookup waiting meanwhile: a mass delete behind
   * spec-guard's back is hundreds of lookups at once, all for the same Secret or file.
   */
  private readonly readStored: () => Promise<Map<string, Tombstone>>;

  constructor(private readonly d: TombstoneKeeperDeps) {
    this.readStored = coalesce(() => d.store.readTombstones());
  }

  /** This replica leads: it sweeps every half confirmation window, and marks held tombstones. */
  lead(): void {
    if (this.sweepTimer) return;
    this.sweepTimer = setInterval(() => void this.sweep(), TOMBSTONE_CONFIRM_MS / 2);
    this.sweepTimer.unref();
  }

  /** Another replica leads (or this one stops): no more sweeps. */
  follow(): void {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  /** The watch's newest version of `key`: terminating with `uid`, or not (or gone). */
  observed(key: string, uid: string | undefined, terminating: boolean): void {
    if (!terminating || !uid) {
      this.terminating.delete(key);
      return;
    }
    if (this.terminating.get(key) === uid) return;
    this.terminating.set(key, uid);
    if (this.sweepTimer) void this.hold(key, uid);
  }

  /** Marks the tombstone of a delete the watch saw begin as held (stored): it never gives way for room. */
  private async hold(key: string, uid: string): Promise<void> {
    try {
      const tombstone = await this.lookup(key, uid);
      if (!confirms(tombstone, uid) || tombstone!.held) return;
      const held = { ...tombstone!, held: true };
      this.d.cache.recordTombstone(key, held);
      await this.d.store.addTombstone(key, held);
    } catch (err) {
      this.d.logger.warn('marking a held tombstone failed; the watch keeps it meanwhile', { key, error: (err as Error).message });
    }
  }

  /** A deleted key's tombstone: the admitting replica may be another one, whose tombstone is in the store. */
  async lookup(key: string, uid: string | undefined): Promise<Tombstone | undefined> {
    const cached = this.d.cache.tombstone(key);
    if (confirms(cached, uid) || !this.d.cache.get(key)) return cached;
    // Another replica admitted the delete: its tombstone is in the store.
    try {
      return (await this.readStored()).get(key);
    } catch (err) {
      this.d.metrics.storeErrors.inc({ operation: 'read-tombstone' });
      throw err;
    }
  }

  /**
   * The leader drops the tombstones that the watch, watching throughout, went past without
   * seeing their delete: forged ones, and deletes that did not happen (refused later on).
   */
  async sweep(): Promise<void> {
    const now = Date.now();
    let stored: Map<string, Tombstone>;
    try {
      stored = await this.d.store.readTombstones();
    } catch (err) {
      this.d.metrics.storeErrors.inc({ operation: 'read-tombstone' });
      this.d.logger.warn('reading the tombstones failed', { error: (err as Error).message });
      return;
    }
    for (const [key, tombstone] of this.d.cache.tombstoneList()) if (!stored.has(key)) stored.set(key, tombstone);
    this.d.metrics.tombstones.set(stored.size);
    for (const key of this.firstSeen.keys()) if (!stored.has(key)) this.firstSeen.delete(key);
    for (const key of stored.keys()) if (!this.firstSeen.has(key)) this.firstSeen.set(key, now);
    // A confirmed delete keeps its tombstone until the removal of its entry is stored: a
    // restart in between must not find the entry without it (and recreate the object).
    const gone = [...stored].filter(([key, tombstone]) => {
      const { group, resource } = parseObjectKey(key);
      if (this.d.cache.get(key) && this.d.unsaved(key)) return false;
      // The watch saw this delete begin: it is confirmed, the finalizers are still at work.
      if (tombstone.uid !== undefined && this.terminating.get(key) === tombstone.uid) return false;
      return expired(tombstone, now, this.d.watchingSince(`${group}/${resource}`) ?? now, this.firstSeen.get(key));
    });
    for (const [key, tombstone] of gone) {
      this.d.cache.clearTombstone(key);
      this.d.logger.info('tombstone expired: the watch never saw its delete', { key, at: tombstone.at });
    }
    await Promise.all(gone.map(([key]) => this.d.store.removeTombstone(key))).catch((err: Error) =>
      this.d.logger.warn('removing expired tombstones failed; the next sweep retries', { error: err.message }),
    );
  }
}
