import { isConflict, isNotFound, type KubeClient } from './client.js';

interface Versioned {
  metadata: { name?: string; resourceVersion?: string };
}

/**
 * One collection of the API, typed: a missing object reads as undefined, a write goes to the
 * version it names (PUT) or creates (POST), and the two ways of meeting a conflict live here,
 * once: `overwrite` (the caller's value wins: take the stored version and write again) and
 * `update` (read, apply the change again, write again).
 */
export class Resources<T extends Versioned> {
  constructor(
    private readonly kube: KubeClient,
    /** The collection's path, e.g. /api/v1/namespaces/ns/secrets. */
    private readonly collection: string,
  ) {}

  private path(name: string): string {
    return `${this.collection}/${encodeURIComponent(name)}`;
  }

  async get(name: string): Promise<T | undefined> {
    try {
      return await this.kube.request<T>('GET', this.path(name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list(query: Record<string, string> = {}): Promise<T[]> {
    return (await this.kube.request<{ items: T[] }>('GET', this.collection, { query })).items;
  }

  /** PUT at `body.metadata.resourceVersion` when it names one, else POST: a 409 means someone wrote first. */
  write(body: T): Promise<T> {
    return body.metadata.resourceVersion ? this.kube.request<T>('PUT', this.path(body.metadata.name!), { body }) : this.kube.request<T>('POST', this.collection, { body });
  }

  /** Writes `body(version)` whatever is stored: a conflict or a missing object takes the stored version and writes again. */
  async overwrite(name: string, body: (resourceVersion: string | undefined) => T, knownVersion: string | undefined, attempts = 4): Promise<T> {
    let version = knownVersion;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.write(body(version));
      } catch (err) {
        if (attempt >= attempts || !(isConflict(err) || isNotFound(err))) throw err;
        version = (await this.get(name))?.metadata.resourceVersion;
      }
    }
  }

  /** Read-modify-write: `change` gets the stored object (or undefined) and returns what to write; a conflict reads and applies again. */
  async update(name: string, change: (current: T | undefined) => T, attempts = 11): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.get(name);
      const next = change(current);
      next.metadata.resourceVersion = current?.metadata.resourceVersion;
      try {
        return await this.write(next);
      } catch (err) {
        if (attempt >= attempts || !isConflict(err)) throw err; // 409: another writer wrote (or created) it first
      }
    }
  }

  /** A JSON merge patch (RFC 7386); with `metadata.resourceVersion` in it, only at that version. */
  mergePatch(name: string, patch: Record<string, unknown>): Promise<T> {
    return this.kube.request<T>('PATCH', this.path(name), { body: patch, contentType: 'application/merge-patch+json' });
  }

  /** True when deleted, false when it was already gone. */
  async delete(name: string): Promise<boolean> {
    try {
      await this.kube.request('DELETE', this.path(name));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}
