import type { CanonicalEntry, Tombstone } from '../cache.js';
import { TombstoneWriter } from '../tombstones.js';
import { emptySnapshot, type CanonicalStore, type Snapshot } from './types.js';

/** Keeps nothing beyond the process: for tests and --standalone. */
export class MemoryStore implements CanonicalStore {
  readonly description = 'memory (lost on restart)';
  private readonly state: Snapshot = emptySnapshot();

  async load(): Promise<Snapshot> {
    return { entries: new Map(this.state.entries), tombstones: new Map(this.state.tombstones) };
  }

  async saveEntries(entries: ReadonlyMap<string, CanonicalEntry>, changed: ReadonlySet<string>): Promise<void> {
    for (const key of changed) {
      const entry = entries.get(key);
      if (entry) this.state.entries.set(key, entry);
      else this.state.entries.delete(key);
    }
  }

  private readonly tombstones = new TombstoneWriter(async (change) => {
    this.state.tombstones = change(this.state.tombstones);
  });

  addTombstone(key: string, tombstone: Tombstone): Promise<void> {
    return this.tombstones.set(key, tombstone);
  }

  usage(): number {
    return 0;
  }

  removeTombstone(key: string): Promise<void> {
    return this.tombstones.set(key, null);
  }

  async readTombstones(): Promise<Map<string, Tombstone>> {
    return new Map(this.state.tombstones);
  }
}
