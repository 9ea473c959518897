import { describe, expect, it } from '@jest/globals';
import { Informer, KubeError, type InformerEvent, type KubeClient, type ListedObject } from '../../src/kube/index.js';
import { shownVersion, type ShownVersion } from '../../src/sync/shown-version.js';

type Obj = ListedObject & { metadata: { name: string; namespace?: string; uid: string; resourceVersion?: string }; spec?: unknown };

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/**
 * One collection as the apiserver serves it: paged lists with continue tokens, watches from
 * a resourceVersion, 410 Gone once the history is compacted.
 */
class FakeCollection {
  readonly objects = new Map<string, Obj>();
  revision = 1;
  lists = 0;
  private watchers: Array<{ from: number; send: (event: unknown) => void; end: (err?: Error) => void }> = [];
  /** Events older than this are gone: a watch from before gets 410. */
  compactedAt = 0;
  /** Called as each list page is asked for (its number, from 0 for every list's first): may throw to fail it. */
  onPage: (page: number) => void = () => undefined;
  private history: Array<{ rv: number; type: string; object: Obj }> = [];

  put(name: string, spec: unknown = {}): void {
    const rv = ++this.revision;
    const existing = this.objects.get(name);
    const object: Obj = { metadata: { name, namespace: 'ns', uid: existing?.metadata.uid ?? `uid-${name}`, resourceVersion: String(rv) }, spec };
    this.objects.set(name, object);
    this.emit(rv, existing ? 'MODIFIED' : 'ADDED', object);
  }

  remove(name: string): void {
    const object = this.objects.get(name)!;
    this.objects.delete(name);
    this.emit(++this.revision, 'DELETED', { ...object, metadata: { ...object.metadata, resourceVersion: String(this.revision) } });
  }

  /** Deletes without any watcher seeing it (the watch was down), and compacts the history. */
  removeUnseen(name: string): void {
    this.objects.delete(name);
    this.compactUnseen();
  }

  /** Changes an object without any watcher seeing it, and compacts the history. */
  putUnseen(name: string, spec: unknown): void {
    const existing = this.objects.get(name)!;
    this.objects.set(name, { ...existing, metadata: { ...existing.metadata, resourceVersion: String(++this.revision) }, spec });
    this.compactUnseen();
  }

  private compactUnseen(): void {
    this.compactedAt = ++this.revision;
    this.history = [];
    for (const w of this.watchers.splice(0)) w.end(new KubeError(410, 'Expired', 'too old resource version'));
  }

  private emit(rv: number, type: string, object: Obj): void {
    this.history.push({ rv, type, object });
    for (const w of this.watchers) w.send({ type, object });
  }

  asKube(): KubeClient {
    return {
      request: async (_method: string, _path: string, options: { query?: Record<string, string | undefined> } = {}) => {
        this.lists++;
        const all = [...this.objects.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
        const start = Number(options.query?.continue ?? 0);
        const limit = Number(options.query?.limit ?? 500);
        this.onPage(start / limit);
        const items = all.slice(start, start + limit);
        const next = start + limit < all.length ? String(start + limit) : undefined;
        return { metadata: { resourceVersion: String(this.revision), continue: next }, items: structuredClone(items) };
      },
      stream: (_path: string, query: Record<string, string | undefined>, onLine: (event: unknown) => void, signal: AbortSignal) =>
        new Promise<void>((resolve, reject) => {
          const from = Number(query.resourceVersion);
          if (from < this.compactedAt) return reject(new KubeError(410, 'Expired', 'too old resource version'));
          const watcher = {
            from,
            send: (event: unknown) => {
              try {
                onLine(structuredClone(event));
              } catch (err) {
                reject(err as Error);
              }
            },
            end: (err?: Error) => (err ? reject(err) : resolve()),
          };
          for (const h of this.history) if (h.rv > from) watcher.send({ type: h.type, object: h.object });
          this.watchers.push(watcher);
          signal.addEventListener('abort', () => {
            this.watchers = this.watchers.filter((w) => w !== watcher);
            reject(new Error('aborted'));
          });
        }),
    } as unknown as KubeClient;
  }
}

function record(events: Array<InformerEvent<Obj, unknown>>) {
  return (event: InformerEvent<Obj, unknown>) => events.push(event);
}

describe('the informer (a reflector with a cache)', () => {
  it('lists page by page into its cache, reports has-synced, then follows the watch; the cache holds the new state when the handler runs', async () => {
    const api = new FakeCollection();
    for (const name of ['a', 'b', 'c', 'd', 'e']) api.put(name, { v: 1 });
    const seenInHandler: unknown[] = [];
    const events: Array<InformerEvent<Obj, Obj>> = [];
    const informer: Informer<Obj> = new Informer<Obj>(api.asKube(), { path: '/x', pageSize: 2 }, (e) => {
      events.push(e);
      seenInHandler.push(e.type === 'DELETED' ? informer.get(e.key) : informer.get(e.key)?.spec);
    });
    expect(informer.hasSynced).toBe(false);
    await informer.start();
    expect(informer.hasSynced).toBe(true);
    expect(api.lists).toBe(3);
    expect([...informer.keys()].sort()).toEqual(['ns/a', 'ns/b', 'ns/c', 'ns/d', 'ns/e']);
    expect(events.every((e) => e.type === 'ADDED' && e.listedAt === '6')).toBe(true);

    api.put('b', { v: 2 });
    api.remove('c');
    await tick(5);
    expect(informer.get('ns/b')?.spec).toEqual({ v: 2 });
    expect(informer.has('ns/c')).toBe(false);
    expect(events.slice(5).map((e) => [e.type, e.key, (e.previous as Obj | undefined)?.spec])).toEqual([
      ['MODIFIED', 'ns/b', { v: 1 }],
      ['DELETED', 'ns/c', { v: 1 }],
    ]);
    expect(seenInHandler.slice(5)).toEqual([{ v: 2 }, undefined]);
    expect(informer.list()).toHaveLength(4);
    informer.stop();
  });

  it('asks for the next list page before it handles the one it has, so the apiserver reads while spec-guard classifies; two pages at most', async () => {
    const api = new FakeCollection();
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) api.put(name);
    const order: string[] = [];
    api.onPage = (page) => order.push(`ask ${page}`);
    const informer = new Informer<Obj>(api.asKube(), { path: '/x', pageSize: 2 }, (e) => order.push(`handle ${e.key}`));
    await informer.start();
    expect(order).toEqual(['ask 0', 'ask 1', 'handle ns/a', 'handle ns/b', 'ask 2', 'handle ns/c', 'handle ns/d', 'handle ns/e', 'handle ns/f']);
    informer.stop();
  });

  it('reports DELETED, with the last cached value, for an object a relist no longer shows (deleted while the watch was down)', async () => {
    const api = new FakeCollection();
    for (const name of ['a', 'b']) api.put(name);
    const events: Array<InformerEvent<Obj, unknown>> = [];
    const informer = new Informer<Obj, string>(api.asKube(), { path: '/x', project: (o) => o.metadata.uid }, record(events));
    await informer.start();
    api.removeUnseen('a');
    for (let i = 0; i < 100 && informer.has('ns/a'); i++) await tick(10);
    const deleted = events.filter((e) => e.type === 'DELETED');
    expect(deleted).toEqual([{ type: 'DELETED', key: 'ns/a', previous: 'uid-a' }]);
    expect(informer.get('ns/b')).toBe('uid-b');
    informer.stop();
  });

  it('keys the caller knows of (state loaded from a store) that the first list misses are reported DELETED; those it shows are not', async () => {
    const api = new FakeCollection();
    api.put('present');
    const events: Array<InformerEvent<Obj, unknown>> = [];
    const known: Array<[string, string]> = [
      ['ns/present', 'uid-present'],
      ['ns/gone-while-down', 'uid-gone'],
    ];
    const informer = new Informer<Obj, string>(api.asKube(), { path: '/x', project: (o) => o.metadata.uid, known: () => known }, record(events));
    await informer.start();
    expect(events.map((e) => [e.type, e.key, e.previous])).toEqual([
      ['MODIFIED', 'ns/present', 'uid-present'],
      ['DELETED', 'ns/gone-while-down', 'uid-gone'],
    ]);
    informer.stop();
  });

  it('resync lists again: every object is reported anew with the list revision, onListed after each complete list', async () => {
    const api = new FakeCollection();
    api.put('a');
    const events: Array<InformerEvent<Obj, unknown>> = [];
    let listed = 0;
    const informer = new Informer<Obj>(api.asKube(), { path: '/x', onListed: () => listed++ }, record(events));
    await informer.start();
    api.put('b');
    await tick(5);
    informer.resync();
    for (let i = 0; i < 100 && listed < 2; i++) await tick(10);
    expect(listed).toBe(2);
    expect(events.map((e) => [e.type, e.key, e.listedAt])).toEqual([
      ['ADDED', 'ns/a', '2'],
      ['ADDED', 'ns/b', undefined],
      ['MODIFIED', 'ns/a', '3'],
      ['MODIFIED', 'ns/b', '3'],
    ]);
    informer.stop();
  });

  it('a resync asked for while a list runs (layers coming into force during a long first list) lists again after it; onListed once, after the second; each listed event names its list', async () => {
    const api = new FakeCollection();
    for (const name of ['a', 'b', 'c', 'd']) api.put(name);
    const events: Array<InformerEvent<Obj, unknown>> = [];
    const listed: number[] = [];
    const informer = new Informer<Obj>(api.asKube(), { path: '/x', pageSize: 2, onListed: (list) => listed.push(list) }, record(events));
    let resynced = false;
    let answeredBy = 0;
    api.onPage = (page) => {
      if (page === 1 && !resynced) {
        resynced = true;
        api.put('e'); // written after the first list's snapshot
        // What the watcher notes: the list that answers this resync is the next one begun.
        answeredBy = informer.listsBegun + 1;
        informer.resync();
      }
    };
    await informer.start();
    for (let i = 0; i < 100 && listed.length < 1; i++) await tick(10);
    expect(listed).toEqual([2]);
    expect(answeredBy).toBe(2);
    // The second list, begun after the resync, shows every object at its revision (6); the first, cut by it, is list 1.
    expect(events.slice(-5).map((e) => [e.key, e.listedAt, e.list])).toEqual(['a', 'b', 'c', 'd', 'e'].map((name) => [`ns/${name}`, '6', 2]));
    expect(events.slice(0, 4).map((e) => [e.key, e.list])).toEqual(['a', 'b', 'c', 'd'].map((name) => [`ns/${name}`, 1]));
    informer.stop();
  });

  it('a relist cut short by an error lists again from the first page: it never watches from a revision only part of the list showed', async () => {
    const api = new FakeCollection();
    for (const name of ['a', 'b', 'c', 'd']) api.put(name);
    const events: Array<InformerEvent<Obj, unknown>> = [];
    const informer = new Informer<Obj>(api.asKube(), { path: '/x', pageSize: 2 }, record(events));
    await informer.start();
    // While the watch is down and history is compacted, 'd' drifts; the relist's second page fails once.
    let failed = false;
    api.onPage = (page) => {
      if (page === 1 && !failed) {
        failed = true;
        throw new Error('connection reset');
      }
    };
    api.putUnseen('d', { drifted: true });
    for (let i = 0; i < 300 && !events.some((e) => e.key === 'ns/d' && (e.object?.spec as { drifted?: boolean })?.drifted); i++) await tick(10);
    expect(failed).toBe(true);
    expect(events.some((e) => e.key === 'ns/d' && (e.object?.spec as { drifted?: boolean })?.drifted)).toBe(true);
    informer.stop();
  });

  it('a first list that fails rejects start() with the error', async () => {
    const kube = { request: async () => Promise.reject(new KubeError(403, 'Forbidden', 'applications is forbidden')) } as unknown as KubeClient;
    await expect(new Informer<Obj>(kube, { path: '/x' }).start()).rejects.toThrow('forbidden');
  });
});

describe("the watcher's projection: which version a version follows (shown-version.ts)", () => {
  it('a version the watch shows follows the one shown before; a list after a gap follows nothing; a list showing the same version keeps what it followed', async () => {
    const api = new FakeCollection();
    api.put('a'); // 2
    const seen: Array<[string, string, string | undefined]> = [];
    const informer: Informer<Obj, ShownVersion> = new Informer<Obj, ShownVersion>(api.asKube(), { path: '/x', project: shownVersion }, (e) => {
      if (e.object) seen.push([e.listedAt ? 'list' : 'watch', e.object.metadata.resourceVersion!, informer.get(e.key)?.follows]);
    });
    await informer.start();
    api.put('a', { v: 1 }); // 3
    api.put('a', { v: 2 }); // 4
    await tick(5);
    api.putUnseen('a', { v: 3 }); // 5, then the history is compacted: the watch gets 410 and lists again
    for (let i = 0; i < 100 && informer.get('ns/a')?.version !== '5'; i++) await tick(10);
    api.put('a', { v: 4 }); // 7 (6 was the compaction)
    await tick(5);
    informer.resync(); // the same version listed again
    for (let i = 0; i < 100 && seen.length < 6; i++) await tick(10);
    expect(seen).toEqual([
      ['list', '2', undefined],
      ['watch', '3', '2'],
      ['watch', '4', '3'],
      ['list', '5', undefined],
      ['watch', '7', '5'],
      ['list', '7', '5'],
    ]);
    informer.stop();
  });

  it('a key known only from the store (no version shown yet) follows nothing', () => {
    const object = { metadata: { name: 'a', uid: 'u', resourceVersion: '9' } };
    expect(shownVersion(object, { version: '' }, false)).toEqual({ version: '9', follows: undefined });
    expect(shownVersion(object, undefined, false)).toEqual({ version: '9', follows: undefined });
    expect(shownVersion(object, { version: '8', follows: '7' }, true)).toEqual({ version: '9' });
  });
});
