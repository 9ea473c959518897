import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { FileStore } from '../../src/sync/index.js';
import { bulkyEntry, smallEntry, packedEqualsItsText } from '../helpers/entries.js';
import { PackedValues, type CanonicalEntry } from '../../src/guard/index.js';

const entry = smallEntry;

const sizeOf = (file: string) => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};

/** A loaded, empty file store and a thousand entries to write to it. */
async function thousand() {
  const path = join(mkdtempSync(join(tmpdir(), 'sg-store-')), 'state.json');
  const store = new FileStore(path, () => undefined);
  await store.load();
  const entries = new Map(Array.from({ length: 1000 }, (_, i) => [`g/r/ns/o${i}`, entry(String(i))]));
  return { path, store, entries };
}

packedEqualsItsText();

describe('file store', () => {
  it('round-trips entries and tombstones through the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sg-store-'));
    const path = join(dir, 'nested', 'state.json');
    const store = new FileStore(path, () => {});
    await store.load();
    const entries = new Map([['g/r/ns/a', entry('a'.repeat(64))], ['g/r/ns/b', entry('b'.repeat(64))]]);
    await store.saveEntries(entries, new Set(entries.keys()));
    await store.addTombstone('g/r/ns/gone', { uid: 'x', at: '2026-12-02T00:00:00Z' });
    entries.delete('g/r/ns/b');
    await store.saveEntries(entries, new Set(['g/r/ns/b']));

    const reloaded = await new FileStore(path, () => {}).load();
    expect([...reloaded.entries.keys()]).toEqual(['g/r/ns/a']);
    expect(reloaded.entries.get('g/r/ns/a')).toEqual(entry('a'.repeat(64)));
    // Packed as each line is read: the whole state's text is never alive at once.
    expect(reloaded.entries.get('g/r/ns/a')!.valuesJson).toBeInstanceOf(PackedValues);
    expect(reloaded.tombstones.get('g/r/ns/gone')).toEqual({ uid: 'x', at: '2026-12-02T00:00:00Z' });
    // The delete of half the state was written as a snapshot (by rename: no temporary file is left).
    expect(readdirSync(join(dir, 'nested')).sort()).toEqual(['state.json', 'state.json.log']);
    expect(readFileSync(`${path}.log`, 'utf8')).toBe('');
  });

  it('moves a corrupt file aside, reports it, and trusts none of it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sg-store-'));
    const path = join(dir, 'state.json');
    writeFileSync(path, '{"format":"spec-guard/canonical-state/v1","entries":{"k":{"viewHash":');
    const reports: Array<[string, Record<string, unknown>]> = [];
    const snapshot = await new FileStore(path, (msg, fields) => reports.push([msg, fields])).load();
    expect(snapshot.entries.size).toBe(0);
    expect(reports).toHaveLength(1);
    expect(reports[0]![0]).toContain('corrupt');
    const aside = readdirSync(dir).find((f) => f.startsWith('state.json.corrupt-'));
    expect(aside).toBeDefined();
    expect(readFileSync(join(dir, aside!), 'utf8')).toContain('"entries"');
  });

  it('refuses a readable file of another format', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sg-store-'));
    const path = join(dir, 'state.json');
    writeFileSync(path, JSON.stringify({ entries: { k: { viewHash: 1 } } }));
    const reports: string[] = [];
    expect((await new FileStore(path, (m) => reports.push(m)).load()).entries.size).toBe(0);
    expect(reports).toHaveLength(1);
  });

  it('writes one entry per line and refuses a file cut short (no trailer), or with a wrong count', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sg-store-'));
    const path = join(dir, 'state.json');
    const store = new FileStore(path, () => undefined);
    await store.load();
    await store.saveEntries(new Map([['a', entry('1')], ['b', entry('2')]]), new Set(['a', 'b']));
    // Two entries of none: written as a snapshot, not appended.
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(JSON.parse(lines[3]!)).toEqual({ entries: 2 });
    for (const broken of [lines.slice(0, 3), [...lines.slice(0, 2), lines[3]!]]) {
      writeFileSync(path, `${broken.join('\n')}\n`);
      const reports: string[] = [];
      expect((await new FileStore(path, (m) => reports.push(m)).load()).entries.size).toBe(0);
      expect(reports).toHaveLength(1);
    }
  });

  it('a write appends what changed, not the state: one entry of a thousand costs one line', async () => {
    const { path, store, entries } = await thousand();
    await store.saveEntries(entries, new Set(entries.keys()));
    const state = sizeOf(path) + sizeOf(`${path}.log`);
    const before = sizeOf(`${path}.log`);
    entries.set('g/r/ns/o7', entry('changed'));
    await store.saveEntries(entries, new Set(['g/r/ns/o7']));
    const appended = sizeOf(`${path}.log`) - before;
    expect(appended).toBeGreaterThan(0);
    expect(appended).toBeLessThan(400);
    expect(appended * 500).toBeLessThan(state);
    expect((await new FileStore(path, () => undefined).load()).entries.get('g/r/ns/o7')).toEqual(entry('changed'));
  });

  it('a change to most of the state is written once, as a snapshot, not appended and then compacted', async () => {
    const { path, store, entries } = await thousand();
    await store.saveEntries(entries, new Set(['g/r/ns/o1']));
    await store.saveEntries(entries, new Set(entries.keys()));
    expect(sizeOf(`${path}.log`)).toBe(0);
    const snapshot = sizeOf(path);
    for (const key of entries.keys()) entries.set(key, entry(`${key}-raised`));
    await store.saveEntries(entries, new Set(entries.keys()));
    expect(sizeOf(`${path}.log`)).toBe(0);
    expect(sizeOf(path)).toBeGreaterThan(snapshot / 2);
    expect((await new FileStore(path, () => undefined).load()).entries).toEqual(entries);
  });

  it('a write cut short by a kill (no commit line, or a torn line) was never acknowledged: set aside and reported, the writes before it kept', async () => {
    for (const cut of [(log: string) => log.slice(0, log.lastIndexOf('{"commit"')), (log: string) => log.slice(0, log.length - 20)]) {
      const dir = mkdtempSync(join(tmpdir(), 'sg-store-'));
      const path = join(dir, 'state.json');
      const store = new FileStore(path, () => undefined);
      await store.load();
      await store.saveEntries(new Map([['a', entry('1')]]), new Set(['a']));
      await store.saveEntries(new Map([['a', entry('1')], ['b', entry('2')]]), new Set(['b']));
      writeFileSync(`${path}.log`, cut(readFileSync(`${path}.log`, 'utf8')));
      const reports: Array<[string, Record<string, unknown>]> = [];
      const loaded = await new FileStore(path, (m, f) => reports.push([m, f])).load();
      expect([...loaded.entries.keys()]).toEqual(['a']);
      expect(reports).toEqual([[expect.stringContaining('cut short'), expect.objectContaining({ records: 1 })]]);
      // Set aside for good: the next start finds a clean state.
      const again: string[] = [];
      expect([...(await new FileStore(path, (m) => again.push(m)).load()).entries.keys()]).toEqual(['a']);
      expect(again).toEqual([]);
    }
  });

  it('reads a state file of the previous format (v1, one JSON document), and rewrites it in this one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sg-store-'));
    const path = join(dir, 'state.json');
    writeFileSync(path, JSON.stringify({ format: 'spec-guard/canonical-state/v1', entries: { a: entry('1') }, tombstones: {} }));
    expect([...(await new FileStore(path, () => undefined).load()).entries.keys()]).toEqual(['a']);
    expect(JSON.parse(readFileSync(path, 'utf8').split('\n')[0]!)).toMatchObject({ format: 'spec-guard/canonical-state/v2' });
  });
});

// A fold rewrites the whole state. It pays once the lines it drops (entries written again or
// deleted, touches, tombstones) outweigh the ones it keeps; a first start, whose writes only
// add entries, used to be folded each time the log outgrew the snapshot: at 100,000 objects
// about twice the state's 600 MB written, and deflated values inflated again, for nothing.
describe('file store folds', () => {
  const big = (i: number, v = 0): CanonicalEntry => ({ ...bulkyEntry(i), viewHash: `${i}-${v}`, valuesJson: JSON.stringify({ '/spec': { pad: 'x'.repeat(20_000), i, v } }) });

  it('a state that only grows is appended, never folded, and its log kept at load', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sg-store-')), 'state.json');
    const store = new FileStore(path, () => undefined);
    await store.load();
    const entries = new Map<string, CanonicalEntry>();
    // 1,000 entries of 20 KB (20 MB, past the 16 MB floor) added 25 at a time, as pages of a first start are.
    for (let i = 0; i < 1000; i++) {
      entries.set(`g/r/ns/o${i}`, big(i));
      if (i % 25 === 24) await store.saveEntries(entries, new Set([...entries.keys()].slice(i - 24, i + 1)));
    }
    // The first write was most of the state: a snapshot of its 25 entries; every later one appended.
    const snapshot = sizeOf(path);
    expect(snapshot).toBeLessThan(25 * 21_000);
    expect(sizeOf(`${path}.log`)).toBeGreaterThan(975 * 20_000);
    const loaded = await new FileStore(path, () => undefined).load();
    expect(loaded.entries.size).toBe(1000);
    expect(loaded.entries.get('g/r/ns/o999')).toEqual(entries.get('g/r/ns/o999'));
    expect(sizeOf(path)).toBe(snapshot);
  });

  it('lines written again are folded once they outweigh the live state: the files stay within about twice it', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sg-store-')), 'state.json');
    const store = new FileStore(path, () => undefined, 0);
    await store.load();
    const entries = new Map(Array.from({ length: 20 }, (_, i) => [`g/r/ns/o${i}`, big(i)] as const));
    await store.saveEntries(entries, new Set(entries.keys()));
    const live = sizeOf(path);
    let folds = 0;
    let largest = 0;
    for (let v = 1; v <= 100; v++) {
      const key = `g/r/ns/o${v % 20}`;
      entries.set(key, big(v % 20, v));
      const logBefore = sizeOf(`${path}.log`);
      await store.saveEntries(entries, new Set([key]));
      if (sizeOf(`${path}.log`) < logBefore) folds++;
      largest = Math.max(largest, sizeOf(path) + sizeOf(`${path}.log`));
    }
    // 100 rewrites of one entry in 20: a fold about every 20 (when the dead lines pass the live ones).
    expect(folds).toBeGreaterThanOrEqual(4);
    expect(folds).toBeLessThanOrEqual(6);
    expect(largest).toBeLessThan(2 * live + 2 * 21_000);
    const loaded = await new FileStore(path, () => undefined).load();
    expect([...loaded.entries.entries()]).toEqual([...entries.entries()]);
  });

  it('a load folds a log whose dead lines outweigh the live ones (a fold the last run did not get to)', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sg-store-')), 'state.json');
    const store = new FileStore(path, () => undefined);
    await store.load();
    const entries = new Map(Array.from({ length: 10 }, (_, i) => [`g/r/ns/o${i}`, big(i)] as const));
    await store.saveEntries(entries, new Set(entries.keys()));
    // Each entry written again once, half of them twice, one write each: below the 16 MB floor, appended.
    for (const [v, i] of [...Array.from({ length: 10 }, (_, i) => [1, i]), ...Array.from({ length: 5 }, (_, i) => [2, i])]) {
      entries.set(`g/r/ns/o${i}`, big(i!, v));
      await store.saveEntries(entries, new Set([`g/r/ns/o${i}`]));
    }
    expect(sizeOf(`${path}.log`)).toBeGreaterThan(15 * 20_000);
    // Loaded where the floor is lower (or after a crash before the fold): folded at once.
    const loaded = await new FileStore(path, () => undefined, 0).load();
    expect(sizeOf(`${path}.log`)).toBe(0);
    expect(sizeOf(path)).toBeLessThan(11 * 21_000);
    expect([...loaded.entries.entries()]).toEqual([...entries.entries()]);
  });
});
