import { mkdtempSync, statSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, jest } from '@jest/globals';
import { CanonicalCache, FileStore, SecretStore, type CanonicalStore } from '../../src/sync/index.js';
import { StoreWriter } from '../../src/sync/store-writer.js';
import { touchOf, type Touch } from '../../src/sync/store/index.js';
import type { CanonicalEntry } from '../../src/guard/index.js';
import { Metrics } from '../../src/metrics/index.js';
import { createLogger } from '../../src/log/index.js';
import { FakeSecrets } from '../helpers/fake-secrets.js';
import { bulkyEntry, packedEqualsItsText } from '../helpers/entries.js';

// Stores of 1,000 bulky entries: on a shared 2-core machine compiling a kube-apiserver beside
// the suite, a test can pass the default 5 s. A hang still fails.
jest.setTimeout(30_000);

/** An entry of ~5 KB with a known-at revision, labels and annotations, as an Application's is. */
const entry = (i: number): CanonicalEntry => ({ ...bulkyEntry(i), seq: 1, resourceVersion: String(100 + i), knownAt: String(100 + i), labels: { team: 'a' }, annotations: { 'spec-guard.io/stamp': 'x' } });

const journalNames = (fake: FakeSecrets) => [...fake.secrets.keys()].filter((n) => /-g\d+-j\d+$/.test(n));

const sizeOf = (file: string) => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};

/** A replica's cache and store writer over `store`, started from what the store holds. */
async function replica(store: CanonicalStore, leading = true) {
  const cache = new CanonicalCache();
  const loaded = await store.load();
  for (const [key, value] of loaded.entries) cache.set(key, value);
  const writer = new StoreWriter(store, cache, new Metrics(false), createLogger('error', () => {}), leading);
  writer.loaded(loaded.entries);
  return { cache, writer };
}

/** What a relist after a blind window does: every object in sync known canonical as of `revision`, stored. */
function raiseAll(cache: CanonicalCache, writer: StoreWriter, revision: string): void {
  for (const key of [...cache.keys()]) {
    cache.set(key, { ...cache.get(key)!, knownAt: revision });
    writer.markDirty(key);
  }
}

const thousand = () => new Map(Array.from({ length: 1000 }, (_, i) => [`argoproj.io/applications/argocd/app-${i}`, entry(i)] as const));

/** A file store holding a thousand entries. */
async function seededFileStore() {
  const path = join(mkdtempSync(join(tmpdir(), 'sg-touch-')), 'state.json');
  const store = new FileStore(path, () => undefined);
  await store.load();
  const entries = thousand();
  await store.saveEntries(entries, new Set(entries.keys()));
  return { path, store, entries };
}

/** A Secret store holding a thousand entries. */
async function seededSecretStore() {
  const fake = new FakeSecrets();
  const store = new SecretStore(fake.asKube(), 'spec-guard', 'state');
  await store.load();
  const entries = thousand();
  await store.saveEntries(entries, new Set(entries.keys()));
  return { fake, store, entries };
}

packedEqualsItsText();

describe('touches: the revisions a relist raises are stored without the entries', () => {
  it('a touch is only the changed revisions; any other difference needs the whole entry', () => {
    const stored = entry(1);
    expect(touchOf(stored, { ...stored, knownAt: '900' })).toEqual({ check: stored.viewHash.slice(0, 16), knownAt: '900' });
    expect(touchOf(stored, { ...stored, uid: 'new', resourceVersion: '901' })).toEqual({ check: stored.viewHash.slice(0, 16), uid: 'new', resourceVersion: '901' });
    expect(touchOf(stored, { ...stored, labels: { team: 'a' } })).toEqual({ check: stored.viewHash.slice(0, 16) });
    for (const changed of [{ labels: { team: 'b' } }, { annotations: {} }, { stamp: 'v2.other' }, { seq: 2 }, { valuesJson: '{}' }, { viewHash: 'f'.repeat(64) }, { knownAt: undefined }]) {
      expect(touchOf(stored, { ...stored, ...changed, knownAt: changed.knownAt === undefined && 'knownAt' in changed ? undefined : '900' })).toBeUndefined();
    }
  });

  it('file store: a relist of 1,000 objects appends about a hundred bytes per object, not the state, and a restart knows every raised revision', async () => {
    const { path, store, entries } = await seededFileStore();
    const state = sizeOf(path) + sizeOf(`${path}.log`);

    const reports: string[] = [];
    const { cache, writer } = await replica(new FileStore(path, (msg) => reports.push(msg)));
    const logBefore = sizeOf(`${path}.log`);
    raiseAll(cache, writer, '5000');
    await writer.stop();
    const written = sizeOf(`${path}.log`) - logBefore;
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(1000 * 120);
    expect(written * 40).toBeLessThan(state);

    const reloaded = await new FileStore(path, (msg) => reports.push(msg)).load();
    expect(reloaded.entries.size).toBe(1000);
    for (const [key, value] of entries) expect(reloaded.entries.get(key)).toEqual({ ...value, knownAt: '5000' });
    expect(reports).toEqual([]);
  });

  it('Secret store: a relist of 1,000 objects writes journals of a few bytes per object, not a new generation of shards', async () => {
    const { fake, store, entries } = await seededSecretStore();
    const stateBytes = [...fake.secrets.values()].reduce((n, s) => n + (s.data?.['entries.json.gz']?.length ?? 0), 0);

    const { cache, writer } = await replica(new SecretStore(fake.asKube(), 'spec-guard', 'state'));
    fake.writes = [];
    raiseAll(cache, writer, '5000');
    await writer.stop();
    expect(fake.writes.filter((w) => /-g\d+-\d+$/.test(w.name))).toEqual([]);
    const written = fake.writes.reduce((n, w) => n + w.bytes, 0);
    expect(written * 20).toBeLessThan(stateBytes);

    const reloaded = await new SecretStore(fake.asKube(), 'spec-guard', 'state').load();
    for (const [key, value] of entries) expect(reloaded.entries.get(key)).toEqual({ ...value, knownAt: '5000' });
    // A spec-guard from before touches (rolled back to) reads the journals' entries alone:
    // only whole entries there, the touches beside them, which it does not read.
    for (const name of journalNames(fake)) {
      const data = fake.secrets.get(name)!.data!;
      const whole = JSON.parse(gunzipSync(Buffer.from(data['entries.json.gz']!, 'base64')).toString('utf8')) as Record<string, unknown>;
      expect(Object.values(whole).every((value) => value === null || typeof (value as CanonicalEntry).valuesJson === 'string')).toBe(true);
      expect(Object.keys(JSON.parse(gunzipSync(Buffer.from(data['touches.json.gz']!, 'base64')).toString('utf8')) as object).length).toBeGreaterThan(0);
    }
  });

  it('Secret store: a touch folded into the newest journal keeps the whole entry it follows, and two touches keep both changes', async () => {
    const { fake, store, entries } = await seededSecretStore();
    const [a, b] = [...entries.keys()] as [string, string];
    const touch = (key: string, fields: Omit<Touch, 'check'>) => new Map([[key, { check: entries.get(key)!.viewHash.slice(0, 16), ...fields }]]);
    // a: a new value (whole), then its revision raised (a touch) into the same journal.
    entries.set(a, entry(7000));
    await store.saveEntries(entries, new Set([a]));
    entries.set(a, { ...entries.get(a)!, knownAt: '7001' });
    await store.saveEntries(entries, new Set(), touch(a, { knownAt: '7001' }));
    // b: a recreated copy's uid, then a later list's revision.
    entries.set(b, { ...entries.get(b)!, uid: 'recreated' });
    await store.saveEntries(entries, new Set(), touch(b, { uid: 'recreated' }));
    entries.set(b, { ...entries.get(b)!, knownAt: '7002' });
    await store.saveEntries(entries, new Set(), touch(b, { knownAt: '7002' }));
    expect(journalNames(fake)).toEqual(['state-g1-j0']);
    const reloaded = await new SecretStore(fake.asKube(), 'spec-guard', 'state').load();
    expect(reloaded.entries.get(a)).toEqual(entries.get(a));
    expect(reloaded.entries.get(b)).toEqual(entries.get(b));
  });

  it('a change of value, labels or stamp is stored whole, even when the revisions changed too', async () => {
    const { path, store, entries } = await seededFileStore();
    const { cache, writer } = await replica(new FileStore(path, () => undefined));
    const keys = [...entries.keys()];
    cache.set(keys[0]!, { ...cache.get(keys[0]!)!, labels: { team: 'b' }, knownAt: '6000' });
    cache.set(keys[1]!, { ...entry(1), knownAt: '6000' });
    cache.set(keys[2]!, { ...cache.get(keys[2]!)!, stamp: 'v2.newer', seq: 2, knownAt: '6000' });
    for (const key of keys.slice(0, 3)) writer.markDirty(key);
    await writer.stop();
    const reloaded = await new FileStore(path, () => undefined).load();
    for (const key of keys.slice(0, 3)) expect(reloaded.entries.get(key)).toEqual(cache.get(key));
  });

  it('a touch that finds another value than its own is not applied (the entry keeps its older revisions, which vouch for less) and is reported', async () => {
    const { path, store, entries } = await seededFileStore();
    const key = [...entries.keys()][5]!;
    const drifted = entry(5);
    await store.saveEntries(entries, new Set(), new Map([[key, { check: drifted.viewHash.slice(0, 16), knownAt: '9999' }]]));
    const reports: Array<Record<string, unknown>> = [];
    const reloaded = await new FileStore(path, (_msg, fields) => reports.push(fields)).load();
    expect(reloaded.entries.get(key)).toEqual(entries.get(key));
    expect(reports).toEqual([expect.objectContaining({ touches: 1 })]);
  });

  it('a new leader of a store other replicas write stores its view whole: a touch measured against what it loaded could miss another leader\'s change', async () => {
    const { fake, entries } = await seededSecretStore();
    const key = [...entries.keys()][3]!;
    // This replica loads, follows; meanwhile the leader stores another value for `key`.
    const { cache, writer } = await replica(new SecretStore(fake.asKube(), 'spec-guard', 'state'), false);
    const other = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    await other.load();
    await other.saveEntries(new Map([...entries, [key, entry(3333)]]), new Set([key]));
    // This replica, now leading, holds the first value (the other value was since found
    // reverted, say) with a raised revision: the store must end up with its view.
    cache.set(key, { ...cache.get(key)!, knownAt: '8000' });
    writer.lead();
    await writer.stop();
    const reloaded = await new SecretStore(fake.asKube(), 'spec-guard', 'state').load();
    expect(reloaded.entries.get(key)).toEqual(cache.get(key));
  });
});
