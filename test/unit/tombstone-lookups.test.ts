import { describe, expect, it } from '@jest/globals';
import { tombstoneOf, type Tombstone } from '../../src/guard/index.js';
import { createLogger } from '../../src/log/index.js';
import { Metrics } from '../../src/metrics/index.js';
import { CanonicalCache } from '../../src/sync/cache.js';
import { MemoryStore } from '../../src/sync/store/index.js';
import { TombstoneKeeper } from '../../src/sync/tombstone-keeper.js';
import { smallEntry } from '../helpers/entries.js';

/** A store whose tombstones take a while to read (a Secret on a busy apiserver), counting the reads. */
class SlowStore extends MemoryStore {
  reads = 0;
  override async readTombstones(): Promise<Map<string, Tombstone>> {
    this.reads++;
    await new Promise((r) => setTimeout(r, 20));
    return super.readTombstones();
  }
}

describe('tombstone lookups of a mass delete behind spec-guard’s back', () => {
  it('read the store once for all the lookups waiting meanwhile, and each finds what another replica stored', async () => {
    const cache = new CanonicalCache();
    const store = new SlowStore();
    const keys = Array.from({ length: 300 }, (_, i) => `argoproj.io/applications/argocd/app-${i}`);
    // Apiserver uids are UUIDs: one per object, its number in the last group.
    const uid = (key: string) => `3f1c2a9e-0b7d-4c55-9a1e-${String(keys.indexOf(key)).padStart(12, '0')}`;
    for (const key of keys) cache.set(key, smallEntry(key));
    // Another replica admitted the delete of every tenth object: its tombstones are in the store only.
    for (const key of keys.filter((_, i) => i % 10 === 0)) await store.addTombstone(key, tombstoneOf(uid(key), Date.now()));
    const keeper = new TombstoneKeeper({ cache, store, metrics: new Metrics(false), logger: createLogger('error', () => undefined), unsaved: () => false, watchingSince: () => undefined });
    const found = await Promise.all(keys.map((key) => keeper.lookup(key, uid(key))));
    expect(found.filter(Boolean)).toHaveLength(30);
    expect(found[10]).toMatchObject({ uid: uid(keys[10]!) });
    // The first lookup's read, and one more shared by all that came while it ran (a read begun
    // before a lookup could miss a tombstone written just before that lookup).
    expect(store.reads).toBe(2);
    // A lookup after those reads reads again: it may follow a tombstone written since.
    await store.addTombstone(keys[1]!, tombstoneOf(uid(keys[1]!), Date.now()));
    await expect(keeper.lookup(keys[1]!, uid(keys[1]!))).resolves.toMatchObject({ uid: uid(keys[1]!) });
    expect(store.reads).toBe(3);
  });
});
