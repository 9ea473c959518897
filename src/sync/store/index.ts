import type { Config } from '../../config/index.js';
import type { KubeClient } from '../../kube/index.js';
import { FileStore } from './file-store.js';
import { STORE_KINDS } from './kinds.js';
import { MemoryStore } from './memory-store.js';
import { SecretStore } from './secret-store.js';
import type { CanonicalStore, StoreReport } from './types.js';

export type { CanonicalStore, Snapshot } from './types.js';
export { touchOf, touches, type Touch } from './touch.js';
export { MemoryStore, FileStore, SecretStore };
export { STORE_KINDS, STORE_SECRET_VERBS, type StoreKind } from './kinds.js';

/** The store the configuration names; `secret` needs a cluster. */
export function createStore(config: Config['store'], kube: KubeClient | undefined, namespace: string, report: StoreReport): CanonicalStore {
  return STORE_KINDS[config.type].create(config, { kube, namespace, report });
}
