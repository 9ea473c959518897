import { parseJson } from '../kube/json.js';
import type { GuardedValues } from './guarded-view.js';
import { PackedValues, valuesText, type ValuesJson } from './packed-values.js';

/** The canonical (source-of-truth) state of one guarded object. */
export interface CanonicalEntry {
  viewHash: string;
  /**
   * The guarded values as JSON text, deflated in memory (packed-values.ts). Kept serialized:
   * parsed objects take several times the memory, and only the rare deny, rewrite and revert
   * paths need them. An entry read from a store holds the text until the watcher packs it.
   */
  valuesJson: ValuesJson;
  /** Stamp annotation that vouches for `values`. */
  stamp: string;
  /** Sequence of that stamp (0 in a store written before sequences existed). */
  seq?: number;
  resourceVersion: string;
  /**
   * The newest revision (etcd resourceVersion) at which the object is known to have held
   * this canonical value: its version when learned or seen in sync, or a later list's.
   * Attribution by continuity starts from here.
   */
  knownAt?: string;
  uid: string;
  apiVersion: string;
  kind: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** The guarded view's id (its set of pointers) when learned; absent: written before doors were named. */
  view?: string;
}

/**
 * The last values read, by the entry they came from: deciding one change reads them up to
 * three times (compare, attribute, revert), each an inflate and a parse otherwise. One slot:
 * parsed values are what the packing keeps out of memory. Callers never modify them.
 */
let lastRead: { valuesJson: ValuesJson; values: GuardedValues } | undefined;

export function entryValues(entry: CanonicalEntry): GuardedValues {
  if (lastRead?.valuesJson !== entry.valuesJson) lastRead = { valuesJson: entry.valuesJson, values: parseJson(valuesText(entry.valuesJson)) as GuardedValues };
  return lastRead.values;
}

/**
 * `entry` with its values packed, in place: a store packs each entry as it reads it, so that
 * the text of only one entry (or one shard) at a time is alive, never the whole state's (at
 * 100,000 objects, 600 MB of strings that held the RSS near 900 MB after loading).
 */
export function packEntry(entry: CanonicalEntry): CanonicalEntry {
  if (typeof entry.valuesJson === 'string') entry.valuesJson = PackedValues.of(entry.valuesJson);
  return entry;
}

/** What admission needs of the cache: read only. */
export interface CanonicalLookup {
  get(key: string): CanonicalEntry | undefined;
  /** A trusted delete recorded for the key, if any. */
  tombstone(key: string): Tombstone | undefined;
}

/** A trusted delete, recorded before the apiserver carries it out. */
export interface Tombstone {
  uid?: string;
  /** When the delete was admitted (ISO time, milliseconds): stamps issued before it are stale on a recreated copy. */
  at: string;
  /** Set by the leader once the watch saw that uid terminating: a real delete a finalizer holds, never evicted for room. */
  held?: boolean;
}

