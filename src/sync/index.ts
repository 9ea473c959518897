export { CanonicalCache } from './cache.js';
export { stamperFromFile, stamperFromSecret, STAMP_KEY_SECRET } from './stamp-key.js';
export { createStore, MemoryStore, FileStore, SecretStore, STORE_KINDS, STORE_SECRET_VERBS, type CanonicalStore, type Snapshot } from './store/index.js';
export { LeaderElector, type LeaderOptions } from './leader.js';
export { Watcher, type WatcherDeps } from './watcher.js';
export { watchScopes } from './watch-scopes.js';
export { NamespaceLabelCache } from './namespace-labels.js';
export { tombstoneRecorder } from './tombstone-keeper.js';
