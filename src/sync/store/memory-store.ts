import type { ContinuityRecord } from '../../guard/attribution.js';
import type { CanonicalEntry, Tombstone } from '../../guard/index.js';
import { TombstoneWriter } from './tombstone-writer.js';
import { emptySnapshot, type CanonicalStore, type Snapshot } from './types.js';

/**
 * Keeps the state in the process: for tests and --standalone, and the base of the file
 * store, which persists the same state after every change.
 */
export class MemoryStore implements CanonicalStore {
  readonly description: string = 'memory (lost on restart)';
  protected state: Snapshot = emptySnapshot();

  /** Makes the current state durable; nothing to do in memory. */
  protected async persist(): Promise<void> {}

  async load(): Promise<Snapshot> {
    return { entries: new Map(this.state.entries), tombstones: new Map(this.state.tombstones), continuity: this.state.continuity };
  }

  async saveContinuity(record: ContinuityRecord): Promise<void> {
    this.state.continuity = record;
    await this.persist();
  }

  async saveEntries(entries: ReadonlyMap<string, CanonicalEntry>, changed: ReadonlySet<string>): Promise<void> {
    for (const key of changed) {
      const entry = entries.get(key);
      if (entry) this.state.entries.set(key, entry);
      else this.state.entries.delete(key);
    }
    await this.persist();
  }

  private readonly tombstones = new TombstoneWriter(async (change) => {
    this.state.tombstones = change(this.state.tombstones);
    await this.persist();
  });

  addTombstone(key: string, tombstone: Tombstone): Promise<void> {
    return this.tombstones.set(key, tombstone);
  }

  removeTombstone(key: string): Promise<void> {
    return this.tombstones.set(key, null);
  }

  async readTombstones(): Promise<Map<string, Tombstone>> {
    return new Map(this.state.tombstones);
  }

  /** No Secret-size limit: entries are bounded by the guarded objects, tombstones by their budget. */
  usage(): number {
    return 0;
  }
}
