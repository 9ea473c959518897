import { describe, expect, it } from '@jest/globals';
import type { CanonicalEntry } from '../../src/guard/index.js';
import { CanonicalCache, MemoryStore } from '../../src/sync/index.js';
import { FlushView } from '../../src/sync/flush-view.js';
import { StoreWriter } from '../../src/sync/store-writer.js';
import { Metrics } from '../../src/metrics/index.js';
import { createLogger } from '../../src/log/index.js';

const entry = (i: number): CanonicalEntry => ({ viewHash: `h${i}`, valuesJson: '{}', stamp: '', seq: i, resourceVersion: String(i), uid: `u${i}`, apiVersion: 'v1', kind: 'Secret' });

describe('FlushView: a store write reads the cache without copying it', () => {
  it('the keys written are pinned as the write began; every other key is read live', () => {
    const live = new Map([['a', entry(1)], ['b', entry(2)], ['c', entry(3)]]);
    const view = new FlushView(live, new Map([['a', entry(1)], ['gone', undefined]]));
    live.set('a', entry(10)); // changed during the write: the write keeps what it began with
    live.set('d', entry(4)); // new during the write: seen by a store that rewrites everything
    live.delete('c');
    expect(view.get('a')).toEqual(entry(1));
    expect(view.get('gone')).toBeUndefined();
    expect(view.has('gone')).toBe(false);
    expect(view.get('d')).toEqual(entry(4));
    expect(new Map(view)).toEqual(new Map([['b', entry(2)], ['d', entry(4)], ['a', entry(1)]]));
    expect([...view.keys()].sort()).toEqual(['a', 'b', 'd']);
    expect(view.size).toBe(live.size);
  });

  it('a change made while the store writes is written by the next write', async () => {
    const cache = new CanonicalCache();
    let release: () => void = () => undefined;
    const writes: Array<Map<string, string | null>> = [];
    // A store whose first write waits until released, recording what each write stored.
    const store = new (class extends MemoryStore {
      private first = true;
      override async saveEntries(entries: ReadonlyMap<string, CanonicalEntry>, changed: ReadonlySet<string>): Promise<void> {
        writes.push(new Map([...changed].map((k) => [k, entries.get(k)?.viewHash ?? null])));
        if (this.first) {
          this.first = false;
          await new Promise<void>((r) => (release = r));
        }
        await super.saveEntries(entries, changed);
      }
    })();
    const writer = new StoreWriter(store, cache, new Metrics(false), createLogger('error', () => {}), true);
    cache.set('k', entry(1));
    writer.markDirty('k');
    for (let i = 0; i < 50 && writes.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    cache.set('k', entry(2)); // during the first write
    writer.markDirty('k');
    release();
    for (let i = 0; i < 50 && writes.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    await writer.stop();
    expect(writes.map((w) => w.get('k'))).toEqual(['h1', 'h2']);
    expect((await store.load()).entries.get('k')?.viewHash).toBe('h2');
  });
});
