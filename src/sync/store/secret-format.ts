import { promisify } from 'node:util';
import { gunzipSync, gzip } from 'node:zlib';
import type { CanonicalEntry, Tombstone } from '../../guard/index.js';
import type { Secret } from '../../kube/index.js';
import { applyTouch, type Touch } from './touch.js';

/** The Secret store's format: the keys and limits of its Secrets, its layout, journals and shards. Pure. */

export const ENTRIES_KEY = 'entries.json.gz';
/** A journal's touches, beside its entries: a spec-guard from before touches reads the entries alone, the safe side. */
export const TOUCHES_KEY = 'touches.json.gz';
export const INDEX_KEY = 'index.json';
export const TOMBSTONES_KEY = 'tombstones.json';
export const CONTINUITY_KEY = 'continuity.json';
export const MAX_SECRET_BYTES = 1024 * 1024;
/** Fewest shards; and the layout of a store written before shards could grow (`<name>-0..15`). */
export const MIN_SHARDS = 16;
/** A shard past this (compressed) size doubles the shard count: room to grow before the 1 MiB limit. */
export const GROW_BYTES = MAX_SECRET_BYTES / 2;
export const INDEX_FORMAT = 'spec-guard/secret-store/v2';
/** The last journal Secret takes further changes (rewritten whole) while it is smaller than this. */
export const JOURNAL_APPEND_BYTES = 128 * 1024;
/** Journals are folded into new shards once they outgrow the shards (and this). */
export const FOLD_MIN_BYTES = MAX_SECRET_BYTES;

/**
 * Where the entries are: shard Secrets `<name>-g<generation>-<i>` for i below `shards`, then
 * the changes since, in journal Secrets `<name>-g<generation>-j<i>` for i below `journal`,
 * applied in order (a null entry: forgotten; `{ touch }`: the entry's revisions alone, kept
 * apart in the Secret under TOUCHES_KEY).
 */
export interface Layout {
  generation: number;
  shards: number;
  journal: number;
}

export type Journal = Record<string, CanonicalEntry | null | { touch: Touch }>;

export const touchIn = (value: Journal[string]): Touch | undefined => (value && 'touch' in value ? value.touch : undefined);

/** Bytes of an encoded Secret's data: what counts against its 1 MiB. */
export const encodedBytes = (data: Record<string, string>) => Object.values(data).reduce((n, v) => n + v.length, 0);

const gzipAsync = promisify(gzip);
/**
 * JSON, gzipped on libuv's threadpool: a whole-state write at 100,000 objects compresses
 * hundreds of MB, which on the main thread held the event loop (admission reviews) for
 * seconds, past the webhooks' 3 s timeout.
 */
export const gzipJson = async (value: unknown): Promise<string> => (await gzipAsync(JSON.stringify(value))).toString('base64');
export const gunzipJson = (raw: string): unknown => JSON.parse(gunzipSync(Buffer.from(raw, 'base64')).toString('utf8'));

/**
 * `later` applied to `earlier` (the newest journal, rewritten whole with further changes): a
 * touch of an entry the journal holds whole becomes that entry, touched (left whole if the
 * touch is not of its value, as a load would); two touches become one.
 */
export function mergeJournal(earlier: Journal, later: Journal): Journal {
  const merged = { ...earlier };
  for (const [key, value] of Object.entries(later)) {
    const touch = touchIn(value);
    const base = merged[key];
    if (!touch || !base) merged[key] = value;
    else {
      const earlierTouch = touchIn(base);
      merged[key] = earlierTouch ? { touch: { ...earlierTouch, ...touch } } : (applyTouch(base as CanonicalEntry, touch) ?? base);
    }
  }
  return merged;
}

/** FNV-1a: a key's shard, cheap enough to compute for every entry on every write. */
export function shardOf(key: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % shards;
}

/** The tombstones a tombstones Secret holds (none when it is absent). */
export function tombstonesIn(secret: Secret | undefined): Map<string, Tombstone> {
  const raw = secret?.data?.[TOMBSTONES_KEY];
  return new Map(raw ? Object.entries(JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as Record<string, Tombstone>) : []);
}
