// bench/store-write: the CPU one store write costs the leader when one object changed, against
// the number of objects guarded (the store writer, a memory store, nothing else running). A
// store write came every 100 ms or more under churn; this is its share of spec-guard's CPU
// beyond the change itself (a revert, a trusted write learned).
import { CanonicalCache, MemoryStore } from '../src/sync/index.js';
import { StoreWriter } from '../src/sync/store-writer.js';
import { Metrics } from '../src/metrics/index.js';
import { createLogger } from '../src/log/index.js';
import type { CanonicalEntry } from '../src/guard/index.js';

const WRITES = 30;
const entry = (i: number): CanonicalEntry => ({ viewHash: `h${i}`, valuesJson: '{}', stamp: '', seq: i, resourceVersion: String(i), uid: `u${i}`, apiVersion: 'argoproj.io/v1alpha1', kind: 'Application' });
const key = (i: number) => `argoproj.io/applications/argocd/app-${i}`;

async function cpuPerWrite(objects: number): Promise<number> {
  const cache = new CanonicalCache();
  for (let i = 0; i < objects; i++) cache.set(key(i), entry(i));
  const writer = new StoreWriter(new MemoryStore(), cache, new Metrics(false), createLogger('error', () => {}), true);
  const before = process.cpuUsage();
  for (let w = 0; w < WRITES; w++) {
    cache.set(key(w), entry(objects + w));
    writer.markDirty(key(w));
    await new Promise((r) => setTimeout(r, 120)); // past the writer's 100 ms batching
  }
  const used = process.cpuUsage(before);
  await writer.stop();
  return (used.user + used.system) / 1000 / WRITES;
}

console.log(`bench/store-write: CPU ms per store write of one changed object (${WRITES} writes, memory store; includes the idle process's own ~1-3 ms per 120 ms)`);
for (const objects of [1_000, 10_000, 100_000]) console.log(`  ${String(objects).padStart(7)} objects: ${(await cpuPerWrite(objects)).toFixed(2)} ms`);
