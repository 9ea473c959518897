import { mkdtempSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, jest } from '@jest/globals';
import { smallEntry, packedEqualsItsText } from '../helpers/entries.js';

// A disk that fills up in the middle of an append: the first write of the next log append
// lands half, then fails with ENOSPC, as write(2) does when the space runs out.
const real = await import('node:fs/promises');
let fillUpOnNextAppend = false;
jest.unstable_mockModule('node:fs/promises', () => ({
  ...real,
  open: async (...args: Parameters<typeof real.open>): Promise<FileHandle> => {
    const handle = await real.open(...args);
    if (!fillUpOnNextAppend || !String(args[0]).endsWith('.log')) return handle;
    fillUpOnNextAppend = false;
    return new Proxy(handle, {
      get(target, prop) {
        if (prop === 'write') {
          return async (chunk: string) => {
            await target.write(chunk.slice(0, Math.floor(chunk.length / 2)));
            throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
          };
        }
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  },
}));
const { FileStore } = await import('../../src/sync/store/file-store.js');

const entry = smallEntry;

packedEqualsItsText();

describe('file store on a disk that fills up', () => {
  it('an append cut short by a full disk is reported to the writer, and once space is back the next write leaves a log that loads, every change in it', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sg-full-')), 'state.json');
    const store = new FileStore(path, () => undefined);
    await store.load();
    const entries = new Map(Array.from({ length: 10 }, (_, i) => [`g/r/ns/o${i}`, entry(`h${i}`)] as const));
    await store.saveEntries(entries, new Set(entries.keys()));
    entries.set('g/r/ns/o1', entry('second'));
    await store.saveEntries(entries, new Set(['g/r/ns/o1']));

    fillUpOnNextAppend = true;
    entries.set('g/r/ns/o2', entry('cut-short'));
    await expect(store.saveEntries(entries, new Set(['g/r/ns/o2']))).rejects.toThrow('ENOSPC');
    // Space is back; the writer retries the failed key with the next change.
    entries.set('g/r/ns/o3', entry('after'));
    await store.saveEntries(entries, new Set(['g/r/ns/o2', 'g/r/ns/o3']));

    const reports: string[] = [];
    const reloaded = await new FileStore(path, (msg) => reports.push(msg)).load();
    expect(reports.filter((r) => r.includes('corrupt'))).toEqual([]);
    expect(reloaded.entries).toEqual(entries);
  });
});
