import { describe, expect, it } from '@jest/globals';
import { objectKey, type CanonicalEntry } from '../../src/guard/index.js';
import { Metrics } from '../../src/metrics/index.js';
import { CanonicalCache } from '../../src/sync/index.js';
import { metricValue, parsePrometheusText } from '../helpers/prometheus.js';

const entry = (i: number): CanonicalEntry => ({ viewHash: `h${i}`, valuesJson: '{}', stamp: '', seq: i, resourceVersion: String(i), uid: `u${i}`, apiVersion: 'argoproj.io/v1alpha1', kind: 'Application' });
const app = (name: string) => objectKey('argoproj.io', 'applications', 'argocd', name);
const secret = (name: string) => objectKey('', 'secrets', 'argocd', name);

async function gauge(metrics: Metrics, resource: string): Promise<number | undefined> {
  const samples = parsePrometheusText(await metrics.registry.metrics());
  return samples.some((s) => s.name === 'spec_guard_canonical_objects' && s.labels.resource === resource)
    ? metricValue(samples, 'spec_guard_canonical_objects', { resource })
    : undefined;
}

describe('spec_guard_canonical_objects', () => {
  // It was set by the leader's store writer after a write only: a follower, and a leader
  // started on a stored state with nothing to write, showed no canonical object at all.
  it('counts what the cache holds at the scrape, with no store write', async () => {
    const cache = new CanonicalCache();
    const metrics = new Metrics(false);
    metrics.countCanonicalObjects(() => cache.countsByResource());
    for (let i = 0; i < 3; i++) cache.set(app(`a${i}`), entry(i));
    cache.set(secret('repo'), entry(9));
    expect(await gauge(metrics, 'applications.argoproj.io')).toBe(3);
    expect(await gauge(metrics, 'secrets')).toBe(1);
  });

  it('follows replacements and deletes, and shows 0 once a resource has none left', async () => {
    const cache = new CanonicalCache();
    const metrics = new Metrics(false);
    metrics.countCanonicalObjects(() => cache.countsByResource());
    cache.set(app('a'), entry(1));
    cache.set(app('a'), entry(2)); // a new canonical value of the same object
    cache.set(app('b'), entry(3));
    expect(await gauge(metrics, 'applications.argoproj.io')).toBe(2);
    cache.delete(app('a'));
    cache.delete(app('a')); // a second delete of the same key counts once
    expect(await gauge(metrics, 'applications.argoproj.io')).toBe(1);
    cache.delete(app('b'));
    expect(await gauge(metrics, 'applications.argoproj.io')).toBe(0);
    expect(cache.countsByResource().size).toBe(1);
  });
});
