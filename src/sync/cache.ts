import type { CanonicalEntry, CanonicalLookup, Tombstone } from '../guard/index.js';

/** In-memory canonical cache shared by admission and the watcher. */
export class CanonicalCache implements CanonicalLookup {
  private readonly entries = new Map<string, CanonicalEntry>();
  private readonly tombstones = new Map<string, Tombstone>();

  get(key: string): CanonicalEntry | undefined {
    return this.entries.get(key);
  }

  set(key: string, entry: CanonicalEntry): void {
    this.entries.set(key, entry);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }

  keys(): IterableIterator<string> {
    return this.entries.keys();
  }


  recordTombstone(key: string, tombstone: Tombstone): void {
    this.tombstones.set(key, tombstone);
  }

  tombstone(key: string): Tombstone | undefined {
    return this.tombstones.get(key);
  }

  clearTombstone(key: string): void {
    this.tombstones.delete(key);
  }

  tombstoneList(): Array<[string, Tombstone]> {
    return [...this.tombstones];
  }
}
