import { parseObjectKey, resourceName, type CanonicalEntry, type CanonicalLookup, type Tombstone } from '../guard/index.js';

/** In-memory canonical cache shared by admission and the watcher. */
export class CanonicalCache implements CanonicalLookup {
  private readonly entries = new Map<string, CanonicalEntry>();
  private readonly tombstones = new Map<string, Tombstone>();
  /**
   * Entries by resource, kept as entries come and go: the canonical-objects gauge reads it at
   * each scrape, on every replica, whether or not a store write followed. Bounded by the
   * guarded resources; a resource stays at 0 once its last entry goes.
   */
  private readonly perResource = new Map<string, number>();

  get(key: string): CanonicalEntry | undefined {
    return this.entries.get(key);
  }

  set(key: string, entry: CanonicalEntry): void {
    if (!this.entries.has(key)) this.count(key, 1);
    this.entries.set(key, entry);
  }

  delete(key: string): void {
    if (this.entries.delete(key)) this.count(key, -1);
  }

  private count(key: string, by: number): void {
    const { group, resource: plural } = parseObjectKey(key);
    const resource = resourceName(group, plural);
    this.perResource.set(resource, (this.perResource.get(resource) ?? 0) + by);
  }

  /** How many entries each resource has (resources that had one, down to 0). */
  countsByResource(): ReadonlyMap<string, number> {
    return this.perResource;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Every entry, live (not a copy): what a store write reads beyond the keys it is for. */
  view(): ReadonlyMap<string, CanonicalEntry> {
    return this.entries;
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
