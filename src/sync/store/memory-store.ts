import type { ContinuityRecord } from '../../guard/attribution.js';
import type { CanonicalEntry, Tombstone } from '../../guard/index.js';
import { TombstoneWriter } from './tombstone-writer.js';
import type { Touch } from './touch.js';
import { emptySnapshot, evictionReport, type CanonicalStore, type Snapshot, type StoreReport } from './types.js';

/** What one write changed: entries and tombstones set (a value) or removed (null), entries touched, or the continuity record. */
export interface StateChange {
  entries?: Map<string, CanonicalEntry | null>;
  touches?: ReadonlyMap<string, Touch>;
  tombstones?: Map<string, Tombstone | null>;
  continuity?: ContinuityRecord;
}

/**
 * Keeps the state in the process: for tests and --standalone, and the base of the file
 * store, which persists each change.
 */
export class MemoryStore implements CanonicalStore {
  readonly description: string = 'memory (lost on restart)';
  readonly shared = false;
  protected state: Snapshot = emptySnapshot();

  constructor(protected readonly report: StoreReport = () => undefined) {}

  /** Makes a change (already applied to `state`) durable; nothing to do in memory. */
  protected async persist(_change: StateChange): Promise<void> {}

  async load(): Promise<Snapshot> {
    return { entries: new Map(this.state.entries), tombstones: new Map(this.state.tombstones), continuity: this.state.continuity };
  }

  async saveContinuity(record: ContinuityRecord): Promise<void> {
    this.state.continuity = record;
    await this.persist({ continuity: record });
  }

  async saveEntries(entries: ReadonlyMap<string, CanonicalEntry>, changed: ReadonlySet<string>, touched: ReadonlyMap<string, Touch> = new Map()): Promise<void> {
    const change = new Map<string, CanonicalEntry | null>();
    for (const key of changed) {
      const entry = entries.get(key);
      if (entry) this.state.entries.set(key, entry);
      else this.state.entries.delete(key);
      change.set(key, entry ?? null);
    }
    for (const key of touched.keys()) {
      const entry = entries.get(key);
      if (entry) this.state.entries.set(key, entry);
    }
    await this.persist({ entries: change, touches: touched });
  }

  private readonly tombstones = new TombstoneWriter(async (change) => {
    const before = this.state.tombstones;
    const after = change(before);
    this.state.tombstones = after;
    const diff = new Map<string, Tombstone | null>();
    for (const [key, tombstone] of after) if (before.get(key) !== tombstone) diff.set(key, tombstone);
    for (const key of before.keys()) if (!after.has(key)) diff.set(key, null);
    await this.persist({ tombstones: diff });
  }, Date.now, (keys) => evictionReport(this.report)(keys));

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
