import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { KubeError, type KubeClient, type Secret } from '../../src/kube/index.js';
import { SecretStore } from '../../src/sync/index.js';
import type { CanonicalEntry } from '../../src/guard/index.js';

/** The Secrets of one namespace, as the apiserver keeps them: resourceVersions, conflicts, 1 MiB. */
class FakeSecrets {
  readonly secrets = new Map<string, Secret>();
  private revision = 0;
  writes: Array<{ method: string; name: string; bytes: number }> = [];

  asKube(): KubeClient {
    return { request: (method: string, path: string, options: { body?: Secret } = {}) => this.request(method, path, options.body) } as unknown as KubeClient;
  }

  private async request(method: string, path: string, body?: Secret): Promise<unknown> {
    const name = /\/secrets\/([^/?]+)$/.exec(path)?.[1];
    if (method === 'GET' && !name) return { items: [...this.secrets.values()] };
    const current = name ? this.secrets.get(name) : undefined;
    if (method === 'GET') {
      if (!current) throw new KubeError(404, 'NotFound', `${name} not found`);
      return structuredClone(current);
    }
    if (method === 'DELETE') {
      if (!current) throw new KubeError(404, 'NotFound', `${name} not found`);
      this.secrets.delete(name!);
      return {};
    }
    const target = body!.metadata.name!;
    const bytes = Object.values(body!.data ?? {}).reduce((n, v) => n + v.length, 0);
    if (bytes > 1024 * 1024) throw new KubeError(422, 'Invalid', 'Too long: must have at most 1048576 bytes');
    if (method === 'POST' && this.secrets.has(target)) throw new KubeError(409, 'AlreadyExists', 'exists');
    if (method === 'PUT' && this.secrets.get(target)?.metadata.resourceVersion !== body!.metadata.resourceVersion) throw new KubeError(409, 'Conflict', 'modified');
    const saved = { ...structuredClone(body!), metadata: { ...body!.metadata, resourceVersion: String(++this.revision) } };
    this.secrets.set(target, saved);
    this.writes.push({ method, name: target, bytes });
    return structuredClone(saved);
  }
}

/** An entry of ~5 KB that compresses as real ones do (mostly structure, some unique values). */
const entry = (i: number): CanonicalEntry => ({
  viewHash: randomBytes(32).toString('hex'),
  valuesJson: JSON.stringify({ '/spec': { source: { repoURL: 'https://github.com/org/repo.git', helm: { parameters: Array.from({ length: 60 }, (_, p) => ({ name: `c${p}.replicas`, value: `${i}-${p}-${randomBytes(6).toString('hex')}` })) } } } }),
  stamp: `v2.${randomBytes(32).toString('hex')}.1.${randomBytes(32).toString('hex')}`,
  resourceVersion: String(i),
  uid: randomBytes(16).toString('hex'),
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
});

const shardNames = (fake: FakeSecrets) => [...fake.secrets.keys()].filter((n) => /^state-g\d+-\d+$/.test(n));

describe('Secret store', () => {
  it('grows its shards with the state: every Secret stays under the limit, and a reload finds every entry', async () => {
    const fake = new FakeSecrets();
    const store = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    await store.load();
    const entries = new Map<string, CanonicalEntry>();
    for (let batch = 0; batch < 8; batch++) {
      const added = new Set<string>();
      for (let i = batch * 1000; i < (batch + 1) * 1000; i++) {
        entries.set(`argoproj.io/applications/agent-${i % 50}/app-${i}`, entry(i));
        added.add(`argoproj.io/applications/agent-${i % 50}/app-${i}`);
      }
      await store.saveEntries(entries, added);
    }
    const shards = shardNames(fake);
    expect(shards.length).toBeGreaterThan(16);
    expect(store.usage()).toBeLessThan(0.75);
    // Only the current generation remains.
    expect(new Set(shards.map((n) => n.split('-')[1]))).toEqual(new Set([shards[0]!.split('-')[1]]));
    const reloaded = await new SecretStore(fake.asKube(), 'spec-guard', 'state').load();
    expect(reloaded.entries.size).toBe(8000);
    expect(reloaded.entries.get('argoproj.io/applications/agent-7/app-7007')).toEqual(entries.get('argoproj.io/applications/agent-7/app-7007'));
  });

  it('a write rewrites only the shards holding a changed entry', async () => {
    const fake = new FakeSecrets();
    const store = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    await store.load();
    const entries = new Map(Array.from({ length: 3000 }, (_, i) => [`g/r/ns/o${i}`, entry(i)] as const));
    await store.saveEntries(entries, new Set(entries.keys()));
    const shards = shardNames(fake).length;
    fake.writes = [];
    entries.set('g/r/ns/o42', entry(4242));
    await store.saveEntries(entries, new Set(['g/r/ns/o42']));
    expect(fake.writes.map((w) => w.method)).toEqual(['PUT']);
    // About one shard's worth, not the state.
    const stateBytes = shardNames(fake).reduce((n, name) => n + fake.secrets.get(name)!.data!['entries.json.gz']!.length, 0);
    expect(fake.writes[0]!.bytes).toBeLessThan((2 * stateBytes) / shards);
  });

  it('moves a store of the earlier layout (16 fixed shards) to the index on its first write, keeping every entry', async () => {
    const fake = new FakeSecrets();
    const { gzipSync } = await import('node:zlib');
    await fake.asKube().request('POST', '/api/v1/namespaces/spec-guard/secrets', {
      body: { metadata: { name: 'state-3', namespace: 'spec-guard' }, data: { 'entries.json.gz': gzipSync(JSON.stringify({ 'g/r/ns/old': entry(1) })).toString('base64') } },
    });
    const store = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    const loaded = await store.load();
    expect([...loaded.entries.keys()]).toEqual(['g/r/ns/old']);
    loaded.entries.set('g/r/ns/new', entry(2));
    await store.saveEntries(loaded.entries, new Set(['g/r/ns/new']));
    expect(fake.secrets.has('state-3')).toBe(false);
    expect(fake.secrets.has('state-index')).toBe(true);
    expect([...(await new SecretStore(fake.asKube(), 'spec-guard', 'state').load()).entries.keys()].sort()).toEqual(['g/r/ns/new', 'g/r/ns/old']);
  });

  it('a leader that loaded before another resharded writes where the index points', async () => {
    const fake = new FakeSecrets();
    const stale = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    await stale.load();
    const entries = new Map(Array.from({ length: 200 }, (_, i) => [`g/r/ns/o${i}`, entry(i)] as const));
    const other = new SecretStore(fake.asKube(), 'spec-guard', 'state');
    await other.load();
    await other.saveEntries(entries, new Set(entries.keys()));
    entries.set('g/r/ns/o1', entry(1001));
    await stale.saveEntries(entries, new Set(entries.keys()));
    const reloaded = await new SecretStore(fake.asKube(), 'spec-guard', 'state').load();
    expect(reloaded.entries.get('g/r/ns/o1')).toEqual(entries.get('g/r/ns/o1'));
    expect(reloaded.entries.size).toBe(200);
  });
});
