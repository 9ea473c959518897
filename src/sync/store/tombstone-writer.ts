import type { Tombstone } from '../../guard/index.js';
import { applyTombstoneChanges } from '../../guard/index.js';
import { coalesce } from '../../kube/coalesce.js';

/** Writes a whole tombstone map, given how to change the current one. */
export type TombstoneWrite = (change: (current: Map<string, Tombstone>) => Map<string, Tombstone>) => Promise<void>;

/**
 * Collects tombstone changes and writes them in batches, one write at a time: concurrent
 * trusted deletes share a write instead of racing each other for one Secret.
 */
export class TombstoneWriter {
  private pending = new Map<string, Tombstone | null>();
  private readonly flush: () => Promise<void>;

  /** `onEvicted`: the keys a write dropped for room (past the budget). */
  constructor(write: TombstoneWrite, now: () => number = Date.now, onEvicted: (keys: string[]) => void = () => undefined) {
    this.flush = coalesce(async () => {
      const changes = this.pending;
      this.pending = new Map();
      if (!changes.size) return;
      let evicted: string[] = [];
      await write((current) => {
        const applied = applyTombstoneChanges(current, changes, now());
        evicted = applied.evicted; // the last attempt's (a 409 retries with a newer current)
        return applied.next;
      });
      if (evicted.length) onEvicted(evicted);
    });
  }

  /** Records (or, with null, removes) a tombstone; resolves once it is written. */
  set(key: string, tombstone: Tombstone | null): Promise<void> {
    this.pending.set(key, tombstone);
    return this.flush();
  }
}
