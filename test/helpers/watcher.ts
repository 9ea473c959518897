import { EventRecorder, type KubeClient } from '../../src/kube/index.js';
import { createLogger } from '../../src/log/index.js';
import { Metrics } from '../../src/metrics/index.js';
import { MemoryStore } from '../../src/sync/store/index.js';
import { Watcher, type WatcherDeps } from '../../src/sync/watcher.js';
import type { TestContext } from './admission.js';

/** A watcher over `kube` with the test context's policy, cache and stamper, a memory store, no logs; leading. */
export function leadingWatcher(t: TestContext, kube: KubeClient, deps: Partial<WatcherDeps> = {}): Watcher {
  const watcher = new Watcher({
    kube,
    policy: t.policy,
    cache: t.cache,
    store: new MemoryStore(),
    stamper: t.stamper,
    metrics: new Metrics(false),
    logger: createLogger('error', () => undefined),
    events: new EventRecorder(kube, 'test', () => undefined),
    ...deps,
  });
  watcher.onLeadershipChange(true);
  return watcher;
}
