import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, jest } from '@jest/globals';
import { FileStore } from '../../src/sync/index.js';

// kill -9 at random moments while the file store writes (appends of whole entries and of
// touches, and the compactions that fold the log into a new snapshot): every acknowledged
// write is there after a restart, and nothing is reported corrupt.
jest.setTimeout(120_000);

const dist = new URL('../../dist/src/sync/index.js', import.meta.url).href;
const KEYS = 300;
/**
 * Write i: even, a whole entry of ~40 KB (viewHash and knownAt i); odd, a touch of the entry
 * write i - 1 made (knownAt i). The log outgrows its 16 MB floor every few hundred writes,
 * so kills also land in compactions.
 */
const keyOf = (i: number) => Math.floor(i / 2) % KEYS;
const writer = (path: string) => `
const { FileStore } = await import(${JSON.stringify(dist)});
const store = new FileStore(${JSON.stringify(path)}, (msg) => { process.stderr.write(msg + '\\n'); });
const loaded = await store.load();
const entries = new Map(loaded.entries);
let i = Number(process.argv[1]);
for (;;) {
  const key = 'g/r/ns/o' + (Math.floor(i / 2) % ${KEYS});
  if (i % 2 === 0) {
    entries.set(key, { viewHash: String(i), valuesJson: JSON.stringify({ '/spec': { pad: 'x'.repeat(40000), i } }), stamp: 's', resourceVersion: String(i), knownAt: String(i), uid: 'u', apiVersion: 'v1', kind: 'K' });
    await store.saveEntries(entries, new Set([key]));
  } else {
    entries.set(key, { ...entries.get(key), knownAt: String(i) });
    await store.saveEntries(entries, new Set(), new Map([[key, { check: String(i - 1), knownAt: String(i) }]]));
  }
  process.stdout.write(i + '\\n');
  i++;
}`;

/**
 * Runs the writer from write number `from` and kills it -9 after `when` ms, or ('compaction')
 * as soon as a compaction's temporary file appears; the last write it acknowledged.
 */
function runAndKill(path: string, from: number, when: number | 'compaction'): Promise<{ acked: number; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', writer(path), String(from)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const dir = join(path, '..');
    const poll = setInterval(() => {
      if (when === 'compaction' && readdirSync(dir).some((f) => f.includes('.tmp-'))) child.kill('SIGKILL');
    }, 1);
    const timer = setTimeout(() => child.kill('SIGKILL'), when === 'compaction' ? 20_000 : when);
    // 'close', not 'exit': acknowledgements still in the pipe when the process dies are read
    // first. Counted at 'exit', a write acknowledged but not yet read looked unacknowledged, and
    // the cut-off write after it landing too looked like two writes past the last acknowledgement.
    child.on('close', () => {
      clearInterval(poll);
      clearTimeout(timer);
      const done = out.split('\n').slice(0, -1);
      resolve({ acked: done.length ? Number(done.at(-1)) : from - 1, stderr });
    });
  });
}

describe('file store under kill -9', () => {
  it('keeps every acknowledged write through kills during appends and compactions', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sg-crash-')), 'state.json');
    let next = 0;
    let compactionsCut = 0;
    // Per key, the values (viewHash/knownAt) it may hold: its last acknowledged write, and a
    // write after it that a kill cut off before its acknowledgement (which may or may not have landed).
    const allowed = new Map<number, Set<string>>();
    const state = (i: number) => (i % 2 === 0 ? `${i}/${i}` : `${i - 1}/${i}`);
    for (const when of [700, 'compaction', 400, 'compaction', 1100, 1900, 'compaction', 3000] as const) {
      const { acked, stderr } = await runAndKill(path, next, when);
      for (let i = next; i <= acked; i++) allowed.set(keyOf(i), new Set([state(i)]));
      const cutOff = acked + 1;
      allowed.set(keyOf(cutOff), new Set([...(allowed.get(keyOf(cutOff)) ?? ['none']), state(cutOff)]));
      expect(stderr).not.toContain('corrupt');
      if (readdirSync(join(path, '..')).some((f) => f.includes('.tmp-'))) compactionsCut++;
      const reports: string[] = [];
      const loaded = await new FileStore(path, (m) => reports.push(m)).load();
      expect(reports.filter((r) => r.includes('corrupt'))).toEqual([]);
      for (let k = 0; k < KEYS; k++) {
        const entry = loaded.entries.get(`g/r/ns/o${k}`);
        const held = entry ? `${entry.viewHash}/${entry.knownAt}` : 'none';
        expect({ key: k, held, ok: (allowed.get(k) ?? new Set(['none'])).has(held) }).toEqual({ key: k, held, ok: true });
        allowed.set(k, new Set([held]));
      }
      // The next run starts with a whole write (a touch of a cut-off write would have nothing to touch).
      next = acked + 2 + ((acked + 2) % 2);
    }
    expect(next).toBeGreaterThan(KEYS * 2);
    console.log(`file store kill -9: ${next} writes over 8 kills, ${compactionsCut} of them during a compaction`);
  });
});
