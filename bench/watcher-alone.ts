// spec-guard's reverting half alone, for bench/revert-own: the Watcher, its Repairer and
// EventRecorder as `serve` builds them (src/runtime/index.ts), leading, with the guard layer
// known to be out of force (nothing registered: every drift is reverted at once, as in
// bench/revert), a memory store, logs at level info on stderr. Leases, the layers' checks and
// the webhook are left out: they take no CPU per revert.
// Usage: node watcher-alone.js KUBECONFIG STAMP_KEY_FILE (prints "watching" once listed)
import { parseConfig } from '../src/config/index.js';
import { Policy, UNKNOWN_LAYERS } from '../src/guard/index.js';
import { EventRecorder, KubeClient } from '../src/kube/index.js';
import { createLogger } from '../src/log/index.js';
import { Metrics } from '../src/metrics/index.js';
import { CanonicalCache, MemoryStore, stamperFromFile, Watcher } from '../src/sync/index.js';
import { benchReverterConfig } from './workload.js';

const [kubeconfig, stampKeyFile] = process.argv.slice(2) as [string, string];
const kube = await KubeClient.load(kubeconfig);
const logger = createLogger('info');
const watcher = new Watcher({
  kube,
  policy: new Policy(parseConfig(benchReverterConfig, 'bench.yaml'), 'system:serviceaccount:spec-guard:spec-guard'),
  cache: new CanonicalCache(),
  store: new MemoryStore(),
  stamper: stamperFromFile(stampKeyFile),
  metrics: new Metrics(),
  logger,
  events: new EventRecorder(kube, 'spec-guard', (err) => logger.warn('event not recorded', { error: err.message })),
  verifyLayers: async () => UNKNOWN_LAYERS,
  layersIfGuardBroken: () => UNKNOWN_LAYERS,
});
watcher.onLeadershipChange(true);
await watcher.start();
process.stdout.write('watching\n');
