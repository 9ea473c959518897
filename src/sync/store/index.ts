import type { Config } from '../../config/index.js';
import type { KubeClient } from '../../kube/index.js';
import { FileStore } from './file-store.js';
import { MemoryStore } from './memory-store.js';
import { SecretStore } from './secret-store.js';
import type { CanonicalStore, StoreReport } from './types.js';

export type { CanonicalStore, Snapshot } from './types.js';
export { touchOf, touches, type Touch } from './touch.js';
export { MemoryStore, FileStore, SecretStore };

/** The store the configuration names; `secret` needs a cluster. */
export function createStore(
  config: Config['store'],
  kube: KubeClient | undefined,
  namespace: string,
  report: StoreReport,
): CanonicalStore {
  switch (config.type) {
    case 'memory':
      return new MemoryStore(report);
    case 'file':
      return new FileStore(config.path, report);
    case 'secret':
      if (!kube) throw new Error('store.type secret needs a cluster; use file or memory with --standalone');
      return new SecretStore(kube, namespace, config.secretName, report);
  }
}
