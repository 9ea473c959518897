import { describe, expect, it, jest } from '@jest/globals';
import { FakeSecrets } from '../helpers/fake-secrets.js';
import { SecretStore } from '../../src/sync/index.js';
import { bulkyEntry, packedEqualsItsText } from '../helpers/entries.js';
import { PackedValues } from '../../src/guard/index.js';

const entry = bulkyEntry;

const shardNames = (fake: FakeSecrets) => [...fake.secrets.keys()].filter((n) => /^state-g\d+-\d+$/.test(n));
const journalNames = (fake: FakeSecrets) => [...fake.secrets.keys()].filter((n) => /^state-g\d+-j\d+$/.test(n));

/** A store with `count` entries written (one full write: shards of generation 1). */
async function seeded(count: number) {
  const fake = new FakeSecrets();
  const store = new SecretStore(fake.asKube(), 'spec-guard', 'state');
  await store.load();
  const entries = new Map(Array.from({ length: count }, (_, i) => [`g/r/ns/o${i}`, entry(i)] as const));
  await store.saveEntries(entries, new Set(entries.keys()));
  return { fake, store, entries };
}

packedEqualsItsText();
// Thousands of 5 KB entries compressed several times over: seconds on a busy machine.
jest.setTimeout(30_000);

describe('Secret store', () => {
  it('grows its shards with the state: every Secret stays under the limit, and a reload finds every entry, journals included', async () => {
    const fake = new FakeSecrets();
    const store = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    await store.load();
    const entries = new Map<string, CanonicalEntry>();
    for (let batch = 0; batch < 8; batch++) {
      const added = new Set<string>();
      for (let i = batch * 1000; i < (batch + 1) * 1000; i++) {
        entries.set(`argoproj.io/applications/agent-${i % 50}/app-${i}`, entry(i));
        added.add(`argoproj.io/applications/agent-${i % 50}/app-${i}`);
      }
      await store.saveEntries(entries, added);
    }
    expect(store.usage()).toBeLessThan(0.75);
    const fromJournals = await new SecretStore(fake.asKube(), 'spec-guard', 'state').load();
    expect(fromJournals.entries).toEqual(entries);
    // A new leader writes it all: folded into shards grown for the state, earlier generations gone.
    await store.saveEntries(entries, new Set(entries.keys()));
    const shards = shardNames(fake);
    expect(shards.length).toBeGreaterThan(16);
    expect(journalNames(fake)).toEqual([]);
    expect(new Set(shards.map((n) => n.split('-')[1]))).toEqual(new Set([shards[0]!.split('-')[1]]));
    const reloaded = await new SecretStore(fake.asKube(), 'spec-guard', 'state').load();
    expect(reloaded.entries.size).toBe(8000);
    // Packed as each shard is read: the whole state's text is never alive at once.
    expect([...reloaded.entries.values()].every((e) => e.valuesJson instanceof PackedValues)).toBe(true);
    expect(reloaded.entries.get('argoproj.io/applications/agent-7/app-7007')).toEqual(entries.get('argoproj.io/applications/agent-7/app-7007'));
  });

  it('a write costs what changed: one change is a small journal write and the index; 1,000 scattered changes of 3,000 about their own size, not the state', async () => {
    const { fake, store, entries } = await seeded(3000);
    const stateBytes = shardNames(fake).reduce((n, name) => n + fake.secrets.get(name)!.data!['entries.json.gz']!.length, 0);
    fake.writes = [];
    entries.set('g/r/ns/o42', entry(4242));
    await store.saveEntries(entries, new Set(['g/r/ns/o42']));
    expect(fake.writes.map((w) => [w.method, w.name])).toEqual([['POST', 'state-g1-j0'], ['PUT', 'state-index']]);
    expect(fake.writes[0]!.bytes).toBeLessThan(5000);
    // The next small change goes into the same journal Secret (rewritten whole while small).
    fake.writes = [];
    entries.delete('g/r/ns/o7');
    await store.saveEntries(entries, new Set(['g/r/ns/o7']));
    expect(fake.writes.map((w) => [w.method, w.name])).toEqual([['PUT', 'state-g1-j0']]);
    // 1,000 scattered changes: written once each, compressed; no shard rewritten.
    fake.writes = [];
    const changed = new Set<string>();
    for (let i = 1; i < 3000; i += 3) {
      entries.set(`g/r/ns/o${i}`, entry(10_000 + i));
      changed.add(`g/r/ns/o${i}`);
    }
    await store.saveEntries(entries, changed);
    expect(fake.writes.filter((w) => /-g\d+-\d+$/.test(w.name))).toEqual([]);
    const written = fake.writes.reduce((n, w) => n + w.bytes, 0);
    expect(written).toBeLessThan(stateBytes / 2);
    const reloaded = await new SecretStore(fake.asKube(), 'spec-guard', 'state').load();
    expect(reloaded.entries).toEqual(entries);
  });

  it('a kill between the journal write and the index write loses only that write: the uncounted journal is not read, and the next write takes its place', async () => {
    const { fake, store, entries } = await seeded(100);
    const before = structuredClone(entries);
    entries.set('g/r/ns/o1', entry(1001));
    fake.failIndexWrites = 1;
    await expect(store.saveEntries(entries, new Set(['g/r/ns/o1']))).rejects.toThrow('killed');
    expect(fake.secrets.has('state-g1-j0')).toBe(true);
    expect((await new SecretStore(fake.asKube(), 'spec-guard', 'state').load()).entries).toEqual(before);
    const restarted = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    await restarted.load();
    entries.set('g/r/ns/o2', entry(1002));
    await restarted.saveEntries(entries, new Set(['g/r/ns/o1', 'g/r/ns/o2']));
    expect((await new SecretStore(fake.asKube(), 'spec-guard', 'state').load()).entries).toEqual(entries);
  });

  it('a whole-state write lets the event loop turn: each shard is compressed off the main thread and written before the next is encoded', async () => {
    const fake = new FakeSecrets();
    const store = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    await store.load();
    const entries = new Map(Array.from({ length: 6000 }, (_, i) => [`g/r/ns/o${i}`, entry(i)] as const));
    let turns = 0;
    let turnsAtFirstWrite: number | undefined;
    let firstWriteAt = 0;
    const ticking = setInterval(() => turns++, 0);
    const realPush = fake.writes.push.bind(fake.writes);
    fake.writes.push = (...items) => {
      if (turnsAtFirstWrite === undefined) [turnsAtFirstWrite, firstWriteAt] = [turns, performance.now()];
      return realPush(...items);
    };
    const started = performance.now();
    await store.saveEntries(entries, new Set(entries.keys()));
    const total = performance.now() - started;
    clearInterval(ticking);
    expect(shardNames(fake).length).toBeGreaterThan(8);
    // Encoding every shard before the first write held the loop for the whole state's compression.
    expect(turnsAtFirstWrite).toBeGreaterThan(0);
    expect(firstWriteAt - started).toBeLessThan(total / 4);
    expect((await new SecretStore(fake.asKube(), 'spec-guard', 'state').load()).entries.size).toBe(6000);
  });

  it('journals are folded into a new generation of shards once they outgrow the shards', async () => {
    const { fake, store, entries } = await seeded(400);
    let folded = false;
    for (let round = 0; round < 40 && !folded; round++) {
      const changed = new Set<string>();
      for (let i = round % 2; i < 400; i += 3) {
        entries.set(`g/r/ns/o${i}`, entry(round * 1000 + i));
        changed.add(`g/r/ns/o${i}`);
      }
      await store.saveEntries(entries, changed);
      folded = shardNames(fake).some((n) => !n.startsWith('state-g1-'));
    }
    expect(folded).toBe(true);
    expect(journalNames(fake).every((n) => !n.startsWith('state-g1-'))).toBe(true);
    expect((await new SecretStore(fake.asKube(), 'spec-guard', 'state').load()).entries).toEqual(entries);
  });

  it('moves a store of the earlier layout (16 fixed shards) to the index on its first write, keeping every entry', async () => {
    const fake = new FakeSecrets();
    const { gzipSync } = await import('node:zlib');
    await fake.asKube().request('POST', '/api/v1/namespaces/spec-guard/secrets', {
      body: { metadata: { name: 'state-3', namespace: 'spec-guard' }, data: { 'entries.json.gz': gzipSync(JSON.stringify({ 'g/r/ns/old': entry(1) })).toString('base64') } },
    });
    const store = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    const loaded = await store.load();
    expect([...loaded.entries.keys()]).toEqual(['g/r/ns/old']);
    loaded.entries.set('g/r/ns/new', entry(2));
    await store.saveEntries(loaded.entries, new Set(['g/r/ns/new']));
    expect(fake.secrets.has('state-3')).toBe(false);
    expect(fake.secrets.has('state-index')).toBe(true);
    expect([...(await new SecretStore(fake.asKube(), 'spec-guard', 'state').load()).entries.keys()].sort()).toEqual(['g/r/ns/new', 'g/r/ns/old']);
  });

  it('a leader that loaded before another resharded writes where the index points', async () => {
    const fake = new FakeSecrets();
    const stale = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    await stale.load();
    const entries = new Map(Array.from({ length: 200 }, (_, i) => [`g/r/ns/o${i}`, entry(i)] as const));
    const other = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    await other.load();
    await other.saveEntries(entries, new Set(entries.keys()));
    entries.set('g/r/ns/o1', entry(1001));
    await stale.saveEntries(entries, new Set(entries.keys()));
    const reloaded = await new SecretStore(fake.asKube(), 'spec-guard', 'state').load();
    expect(reloaded.entries.get('g/r/ns/o1')).toEqual(entries.get('g/r/ns/o1'));
    expect(reloaded.entries.size).toBe(200);
  });
});
