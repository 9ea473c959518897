import { KubeError, type KubeClient, type Secret } from '../../src/kube/index.js';

/** The Secrets of one namespace, as the apiserver keeps them: resourceVersions, conflicts, 1 MiB. */
export class FakeSecrets {
  readonly secrets = new Map<string, Secret>();
  private revision = 0;
  writes: Array<{ method: string; name: string; bytes: number }> = [];
  /** Index writes to fail as if the process were killed just before them. */
  failIndexWrites = 0;

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
    if (target.endsWith('-index') && this.failIndexWrites > 0) {
      this.failIndexWrites--;
      throw new Error('killed before the index write');
    }
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

