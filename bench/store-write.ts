// bench/store-write: the CPU one store write costs the leader when one object changed, against
// the number of objects guarded (the store writer, a memory store, nothing else running). A
// store write came every 100 ms or more under churn; this is its share of spec-guard's CPU
// beyond the change itself (a revert, a trusted write learned). Then a new leader's write of
// every entry to the Secret store: how long it holds the event loop that answers admission.
import { CanonicalCache, MemoryStore, SecretStore } from '../src/sync/index.js';
import type { KubeClient } from '../src/kube/index.js';
import { FakeSecrets } from '../test/helpers/fake-secrets.js';
import { bulkyEntry } from '../test/helpers/bulky-entry.js';
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

/**
 * A new leader's write of every entry to the Secret store (in-memory Secrets, each write a
 * 2 ms round trip): how long the event loop, which answers admission reviews, was held at
 * most, and the CPU it took (every thread: compression runs on the threadpool). The webhooks
 * time out after 3 s.
 */
async function secretStoreFullWrite(objects: number): Promise<string> {
  const fake = new FakeSecrets().asKube();
  const roundTrip = { request: async (...args: unknown[]) => (await new Promise((r) => setTimeout(r, 2)), (fake.request as (...a: unknown[]) => unknown)(...args)) } as unknown as KubeClient;
  const store = new SecretStore(roundTrip, 'spec-guard', 'state');
  await store.load();
  const entries = new Map(Array.from({ length: objects }, (_, i) => [key(i), bulkyEntry(i)] as const));
  let held = 0;
  let last = performance.now();
  const ticking = setInterval(() => ((held = Math.max(held, performance.now() - last)), (last = performance.now())), 1);
  const started = performance.now();
  const cpu = process.cpuUsage();
  await store.saveEntries(entries, new Set(entries.keys()));
  const used = process.cpuUsage(cpu);
  clearInterval(ticking);
  return `${String(objects).padStart(7)} objects: ${((performance.now() - started) / 1000).toFixed(1)} s, CPU ${((used.user + used.system) / 1e6).toFixed(1)} s, event loop held at most ${held.toFixed(0)} ms`;
}

console.log(`bench/store-write: CPU ms per store write of one changed object (${WRITES} writes, memory store; includes the idle process's own ~1-3 ms per 120 ms)`);
for (const objects of [1_000, 10_000, 100_000]) console.log(`  ${String(objects).padStart(7)} objects: ${(await cpuPerWrite(objects)).toFixed(2)} ms`);
console.log('a new leader writes every entry to the Secret store (compression runs on the threadpool, beside the main thread):');
for (const objects of [10_000, 50_000]) console.log(`  ${await secretStoreFullWrite(objects)}`);
