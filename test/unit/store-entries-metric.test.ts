import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { objectKey, type CanonicalEntry } from '../../src/guard/index.js';
import { Metrics } from '../../src/metrics/index.js';
import { createLogger } from '../../src/log/index.js';
import { CanonicalCache, FileStore } from '../../src/sync/index.js';
import { StoreWriter } from '../../src/sync/store-writer.js';
import { metricValue, parsePrometheusText } from '../helpers/prometheus.js';

const entry = (i: number): CanonicalEntry => ({ viewHash: `h${i}`, valuesJson: '{}', stamp: '', seq: i, resourceVersion: String(i), uid: `u${i}`, apiVersion: 'argoproj.io/v1alpha1', kind: 'Application' });
const app = (i: number) => objectKey('argoproj.io', 'applications', 'argocd', `app-${i}`);
const storeEntries = async (metrics: Metrics) => metricValue(parsePrometheusText(await metrics.registry.metrics()), 'spec_guard_store_entries', {});

/** A leader's writer over a file store, started from what the store holds. */
async function leader(path: string) {
  const store = new FileStore(path, () => undefined);
  const loaded = await store.load();
  const cache = new CanonicalCache();
  for (const [key, value] of loaded.entries) cache.set(key, value);
  const metrics = new Metrics(false);
  const writer = new StoreWriter(store, cache, metrics, createLogger('error', () => {}), true);
  writer.loaded(loaded.entries);
  return { cache, metrics, writer };
}

describe('spec_guard_store_entries', () => {
  // Whether the canonical state is on disk yet could not be told from outside: a first start
  // at 100,000 objects was measured (bench:scale) before its first write had ended.
  it('shows what the store holds: nothing learned is counted before it is written, everything once it is', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sg-store-entries-')), 'state.json');
    const first = await leader(path);
    expect(await storeEntries(first.metrics)).toBe(0);
    for (let i = 0; i < 3; i++) {
      first.cache.set(app(i), entry(i));
      first.writer.markDirty(app(i));
    }
    expect(await storeEntries(first.metrics)).toBe(0); // learned, not written yet
    await first.writer.stop(); // writes what is left
    expect(await storeEntries(first.metrics)).toBe(3);

    const restarted = await leader(path);
    expect(await storeEntries(restarted.metrics)).toBe(3); // loaded
    restarted.cache.delete(app(0));
    restarted.writer.markDirty(app(0));
    await restarted.writer.stop();
    expect(await storeEntries(restarted.metrics)).toBe(2);
  });
});
