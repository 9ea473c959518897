import { mkdir, open, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Config } from '../../config/index.js';
import type { KubeClient } from '../../kube/index.js';
import { FileStore } from './file-store.js';
import { MemoryStore } from './memory-store.js';
import { SecretStore } from './secret-store.js';
import type { CanonicalStore, StoreReport } from './types.js';

type StoreConfig = Config['store'];

/**
 * Everything spec-guard knows of one kind of store, in one place: how it is made, which
 * verbs on Secrets in spec-guard's namespace it needs (the RBAC renders every kind's, so that
 * switching stores needs no new grant; start-up checks ask for the configured one's), and what
 * to check before start. A new kind is a descriptor here and a name in the configuration's enum
 * (the record's type makes a missing descriptor a compile error).
 */
export interface StoreKind {
  create(config: StoreConfig, context: { kube?: KubeClient; namespace: string; report: StoreReport }): CanonicalStore;
  /** Verbs on Secrets of spec-guard's namespace, besides get, create and update (which spec-guard needs anyway). */
  secretVerbs: readonly string[];
  /** What stands in the way of using it (empty: nothing), before anything is registered. */
  check(config: StoreConfig): Promise<Array<{ where: string; message: string }>>;
}

const nothingToCheck = async () => [];

/** The file store's directory can be created and written. */
async function checkWritable(config: StoreConfig) {
  const dir = dirname(config.path);
  const probe = join(dir, `.spec-guard-write-test-${process.pid}`);
  try {
    await mkdir(dir, { recursive: true });
    const handle = await open(probe, 'w', 0o600);
    await handle.close();
    await unlink(probe);
    return [];
  } catch (err) {
    return [{ where: 'store.path', message: `cannot write to ${dir}: ${(err as Error).message}` }];
  }
}

export const STORE_KINDS: { readonly [K in StoreConfig['type']]: StoreKind } = {
  memory: { create: (_config, { report }) => new MemoryStore(report), secretVerbs: [], check: nothingToCheck },
  file: { create: (config, { report }) => new FileStore(config.path, report), secretVerbs: [], check: checkWritable },
  secret: {
    create: (config, { kube, namespace, report }) => {
      if (!kube) throw new Error('store.type secret needs a cluster; use file or memory with --standalone');
      return new SecretStore(kube, namespace, config.secretName, report);
    },
    // list: the shards of earlier layouts; delete: removing them once the store outgrew them.
    secretVerbs: ['list', 'delete'],
    check: nothingToCheck,
  },
};

/** Every verb some kind of store needs on Secrets of spec-guard's namespace. */
export const STORE_SECRET_VERBS = [...new Set(Object.values(STORE_KINDS).flatMap((kind) => kind.secretVerbs))];
