import { describe, expect, it } from '@jest/globals';
import { KubeError, Resources, type KubeClient } from '../../src/kube/index.js';

interface Obj {
  metadata: { name: string; resourceVersion?: string };
  value: number;
}

/** An apiserver of one collection in memory: versions, 404 and 409 as the real one answers them. */
function fakeApi() {
  const stored = new Map<string, Obj>();
  let revision = 0;
  const calls: string[] = [];
  const request = async (method: string, path: string, options: { body?: Obj } = {}) => {
    calls.push(method);
    const name = path.split('/')[3];
    const current = name ? stored.get(name) : undefined;
    if (method === 'GET' && name) {
      if (!current) throw new KubeError(404, 'NotFound', 'not found');
      return structuredClone(current);
    }
    if (method === 'GET') return { items: [...stored.values()] };
    if (method === 'DELETE') {
      if (!stored.delete(name!)) throw new KubeError(404, 'NotFound', 'not found');
      return {};
    }
    const body = structuredClone(options.body!);
    if (method === 'POST' && stored.has(body.metadata.name)) throw new KubeError(409, 'AlreadyExists', 'exists');
    if (method === 'PUT' && (!current || current.metadata.resourceVersion !== body.metadata.resourceVersion)) throw new KubeError(current ? 409 : 404, 'Conflict', 'conflict');
    body.metadata.resourceVersion = String(++revision);
    stored.set(body.metadata.name, body);
    return structuredClone(body);
  };
  const resources = new Resources<Obj>({ request } as unknown as KubeClient, '/api/objs');
  return { stored, calls, resources, bump: (name: string) => (stored.get(name)!.metadata.resourceVersion = String(++revision)) };
}

describe('Resources (one typed way to read and write)', () => {
  it('reads a missing object as undefined and deletes it as false', async () => {
    const { resources } = fakeApi();
    expect(await resources.get('absent')).toBeUndefined();
    expect(await resources.delete('absent')).toBe(false);
  });

  it('write creates without a version and replaces at one; a stale version is a conflict for the caller', async () => {
    const { resources } = fakeApi();
    const created = await resources.write({ metadata: { name: 'a' }, value: 1 });
    const replaced = await resources.write({ metadata: { name: 'a', resourceVersion: created.metadata.resourceVersion }, value: 2 });
    expect(replaced.value).toBe(2);
    await expect(resources.write({ metadata: { name: 'a', resourceVersion: created.metadata.resourceVersion }, value: 3 })).rejects.toMatchObject({ status: 409 });
  });

  it('overwrite wins over a stale or missing version: it takes the stored one and writes again', async () => {
    const { resources, stored } = fakeApi();
    const first = await resources.overwrite('a', (v) => ({ metadata: { name: 'a', resourceVersion: v }, value: 1 }), undefined);
    // Someone else wrote since: the caller's known version is stale.
    stored.get('a')!.metadata.resourceVersion = '99';
    const second = await resources.overwrite('a', (v) => ({ metadata: { name: 'a', resourceVersion: v }, value: 2 }), first.metadata.resourceVersion);
    expect(second.value).toBe(2);
    // Deleted meanwhile: created again.
    stored.clear();
    expect((await resources.overwrite('a', (v) => ({ metadata: { name: 'a', resourceVersion: v }, value: 3 }), second.metadata.resourceVersion)).value).toBe(3);
  });

  it('update applies the change to what is stored, again after a conflict, so no concurrent change is lost', async () => {
    const { resources, bump } = fakeApi();
    await resources.write({ metadata: { name: 'n' }, value: 0 });
    let runs = 0;
    const updated = await resources.update('n', (current) => {
      runs++;
      if (runs === 1) bump('n'); // another writer slips in between the read and the write
      return { metadata: { name: 'n' }, value: (current?.value ?? 0) + 1 };
    });
    expect(runs).toBe(2);
    expect(updated.value).toBe(1);
  });
});
