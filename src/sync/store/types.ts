import type { ContinuityRecord } from '../../guard/attribution.js';
import type { CanonicalEntry, Tombstone } from '../../guard/index.js';
import type { Touch } from './touch.js';

/** What a store keeps: the canonical entries and the tombstones of trusted deletes. */
export interface Snapshot {
  entries: Map<string, CanonicalEntry>;
  tombstones: Map<string, Tombstone>;
  /** The admission objects as last verified in force (absent: never verified). */
  continuity?: ContinuityRecord;
}

/**
 * Durable home of the canonical cache. Only the leader writes entries; any replica
 * records a tombstone (a trusted delete admitted by it), durably before it answers.
 */
export interface CanonicalStore {
  /** For logs and `spec-guard status`, e.g. "file /var/lib/spec-guard/state.json". */
  readonly description: string;
  /** Written by several replicas (one leader at a time): a new leader rewrites it whole. */
  readonly shared: boolean;
  load(): Promise<Snapshot>;
  /**
   * Persists the entries whose keys are in `changed` (absent from `entries`: removed), and
   * the touches of `touched` (entries whose revisions alone changed since they were stored).
   */
  saveEntries(entries: ReadonlyMap<string, CanonicalEntry>, changed: ReadonlySet<string>, touched?: ReadonlyMap<string, Touch>): Promise<void>;
  /** Remembers the admission layers' continuity (leader only). */
  saveContinuity(record: ContinuityRecord): Promise<void>;
  /** Written in batches with concurrent calls; fails past the tombstone budget. */
  addTombstone(key: string, tombstone: Tombstone): Promise<void>;
  removeTombstone(key: string): Promise<void>;
  /**
   * How full the fullest piece of the store is, against its hard limit (a Secret's 1 MiB),
   * from 0 to 1; 0 where there is no such limit (file, memory).
   */
  usage(): number;
  /** A fresh read: another replica may have recorded one a moment ago. */
  readTombstones(): Promise<Map<string, Tombstone>>;
}

export const emptySnapshot = (): Snapshot => ({ entries: new Map(), tombstones: new Map() });

/** How a store reports a problem it handled (logged as an error by the runtime). */
export type StoreReport = (msg: string, fields: Record<string, unknown>) => void;

/** What a store says when a tombstone write dropped some for room. */
export const evictionReport = (report: StoreReport) => (keys: string[]) =>
  report('tombstones evicted for room: more deletes than the budget are waiting for the watch (forged reviews, where reviews are not authenticated?)', { evicted: keys.length, first: keys[0] });
