import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import type { CanonicalEntry } from '../guard/index.js';
import type { CanonicalCache } from './cache.js';
import { FlushView } from './flush-view.js';
import { touches, touchOf, type CanonicalStore, type Touch } from './store/index.js';

/** Store writes wait at least this long, and at least twice as long as the last write took. */
const STORE_FLUSH_MS = 100;
const RETRY_MS = 2000;
/** Longest a hold keeps writes back: a first list of 100,000 objects takes about 20 s on two shared cores. */
const MAX_HOLD_MS = 60_000;

/**
 * Writes the canonical cache to the store: the keys that changed, batched; an entry whose
 * revisions alone changed since it was stored (a relist raises every object's known-at
 * revision) as a touch of a hundred bytes, not the entry. Only the leader writes; what
 * changes while following is remembered (bounded by the objects) and written once this
 * replica leads.
 */
export class StoreWriter {
  private dirty = new Set<string>();
  /**
   * The entries as this replica last loaded or wrote them: what a touch is measured against.
   * The entry objects are the cache's own (their values are shared), so this costs a map slot per key.
   */
  private readonly stored = new Map<string, CanonicalEntry>();
  private readonly unsavedWhileFollowing = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private lastFlushMs = 0;
  private flushing: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Writes wait while this is set (a start's first list): see hold(). */
  private held: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: CanonicalStore,
    private readonly cache: CanonicalCache,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    /** Told by lead() and follow(): only the leader writes. */
    private leading = false,
  ) {}

  /** `key`'s canonical value changed (or was forgotten): store it. */
  markDirty(key: string): void {
    if (!this.leading) {
      this.unsavedWhileFollowing.add(key);
      return;
    }
    this.dirty.add(key);
    this.schedule();
  }

  /** True while a change of `key` waits to be written. */
  unsaved(key: string): boolean {
    return this.dirty.has(key);
  }

  /** What the store held when this replica loaded it. */
  loaded(entries: ReadonlyMap<string, CanonicalEntry>): void {
    for (const [key, entry] of entries) this.stored.set(key, entry);
    this.metrics.storeEntries.set(this.stored.size);
  }

  /** A new leader writes what it has not stored: everything, when other replicas write the store too. */
  lead(): void {
    this.leading = true;
    // A store other replicas write may hold another leader's view: rewrite it all, whole
    // (nothing it holds is known). One only this replica writes holds what it loaded: the
    // changes seen while following are enough.
    if (this.store.shared) this.stored.clear();
    for (const key of this.store.shared ? this.cache.keys() : this.unsavedWhileFollowing) this.dirty.add(key);
    this.unsavedWhileFollowing.clear();
    this.schedule();
  }

  /**
   * Holds writes back until release() (or `maxMs`): a start's first list learns every object,
   * and writing the state as it grows rewrote it again and again (a Secret store rewrites it
   * whole while most of it is new), competing with the list for the apiserver. Nothing is at
   * risk meanwhile: what the list learns is on the objects (their stamps) and is learned again
   * by the next start's list; a stopping leader writes what it holds (stop()).
   */
  hold(maxMs = MAX_HOLD_MS): void {
    clearTimeout(this.held);
    this.held = setTimeout(() => this.release(), maxMs);
    this.held.unref();
  }

  /** Writes what the hold kept back, and from now on as changes come. */
  release(): void {
    if (!this.held) return;
    clearTimeout(this.held);
    this.held = undefined;
    if (this.dirty.size > 0) this.schedule();
  }

  /** Another replica leads: it writes from now on. */
  follow(): void {
    this.leading = false;
  }

  /** Writes what is left (a leader stopping), then no more. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.held);
    await this.flushing;
    await this.flush();
  }

  private schedule(): void {
    if (this.timer || this.stopped || this.held) return;
    // Under churn, write less often, not more: the next write waits twice as long as the last took.
    this.timer = setTimeout(() => {
      this.flushing = this.flushing.then(() => this.flush());
    }, Math.max(STORE_FLUSH_MS, 2 * this.lastFlushMs));
  }

  private async flush(): Promise<void> {
    this.timer = undefined;
    if (!this.leading || this.dirty.size === 0) return;
    const started = Date.now();
    const changed = this.dirty;
    this.dirty = new Set();
    const pinned = new Map<string, CanonicalEntry | undefined>();
    for (const key of changed) pinned.set(key, this.cache.get(key));
    const entries = new FlushView(this.cache.view(), pinned);
    const whole = new Set<string>();
    const touched = new Map<string, Touch>();
    for (const key of changed) {
      const entry = entries.get(key);
      const stored = this.stored.get(key);
      const touch = entry && stored ? touchOf(stored, entry) : undefined;
      if (!touch) whole.add(key);
      else if (touches(touch)) touched.set(key, touch);
    }
    try {
      await this.store.saveEntries(entries, whole, touched);
      for (const key of changed) {
        const entry = entries.get(key);
        if (entry) this.stored.set(key, entry);
        else this.stored.delete(key);
      }
    } catch (err) {
      this.metrics.storeErrors.inc({ operation: 'save' });
      this.logger.error('saving the canonical state failed; retrying', { store: this.store.description, error: (err as Error).message });
      for (const key of changed) this.dirty.add(key);
      setTimeout(() => this.schedule(), RETRY_MS).unref();
    }
    this.metrics.storeUsage.set(this.store.usage());
    this.metrics.storeEntries.set(this.stored.size);
    this.lastFlushMs = Date.now() - started;
  }
}
