import { isConflict, isNotFound, type KubeClient, type RequestOptions } from './client.js';
import { collectionPath } from './resource-paths.js';

interface Versioned {
  metadata?: { name?: string; resourceVersion?: string };
}

/** What a call may add: a timeout, query parameters (fieldManager, labelSelector), a look at the response headers. */
export type CallOptions = Pick<RequestOptions, 'timeoutMs' | 'query' | 'onHeaders' | 'onSent'>;

/**
 * One collection of the API, typed: a missing object reads as undefined, a write goes to the
 * version it names (PUT) or creates (POST), and the two ways of meeting a conflict live here,
 * once: `overwrite` (the caller's value wins: take the stored version and write again) and
 * `update` (read, apply the change again, write again). The one way spec-guard reads and
 * writes API objects outside kube/ (the informers and the reflector stream their own).
 */
export class Resources<T extends Versioned> {
  /** The collection of `group/version/resource`, in `namespace` (none: cluster-scoped). */
  static of<T extends Versioned>(kube: KubeClient, group: string, version: string, resource: string, namespace?: string): Resources<T> {
    return new Resources<T>(kube, collectionPath(group, version, resource, namespace));
  }

  constructor(
    private readonly kube: KubeClient,
    /** The collection's path, e.g. /api/v1/namespaces/ns/secrets. */
    private readonly collection: string,
  ) {}

  private path(name: string): string {
    return `${this.collection}/${encodeURIComponent(name)}`;
  }

  async get(name: string, options: CallOptions = {}): Promise<T | undefined> {
    try {
      return await this.kube.request<T>('GET', this.path(name), options);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list(query: Record<string, string> = {}, options: CallOptions = {}): Promise<T[]> {
    return (await this.listAt(query, options)).items;
  }

  /** The list and the revision it is a consistent snapshot of. */
  async listAt(query: Record<string, string> = {}, options: CallOptions = {}): Promise<{ items: T[]; revision: string }> {
    const list = await this.kube.request<{ metadata?: { resourceVersion?: string }; items: T[] }>('GET', this.collection, { ...options, query: { ...options.query, ...query } });
    return { items: list.items, revision: list.metadata?.resourceVersion ?? '' };
  }

  /** POST: a new object (409 when it exists), or a review (SelfSubjectAccessReview …) answered in the reply. */
  create<R = T>(body: unknown, options: CallOptions = {}): Promise<R> {
    return this.kube.request<R>('POST', this.collection, { ...options, body });
  }

  /** PUT at `body.metadata.resourceVersion`: 409 when someone wrote since. */
  replace(body: T, options: CallOptions = {}): Promise<T> {
    return this.kube.request<T>('PUT', this.path(body.metadata!.name!), { ...options, body });
  }

  /** PUT at `body.metadata.resourceVersion` when it names one, else POST: a 409 means someone wrote first. */
  write(body: T, options: CallOptions = {}): Promise<T> {
    return body.metadata?.resourceVersion ? this.replace(body, options) : this.create(body, options);
  }

  /** Writes `body(version)` whatever is stored: a conflict or a missing object takes the stored version and writes again. */
  async overwrite(name: string, body: (resourceVersion: string | undefined) => T, knownVersion: string | undefined, attempts = 4): Promise<T> {
    let version = knownVersion;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.write(body(version));
      } catch (err) {
        if (attempt >= attempts || !(isConflict(err) || isNotFound(err))) throw err;
        version = (await this.get(name))?.metadata?.resourceVersion;
      }
    }
  }

  /** Read-modify-write: `change` gets the stored object (or undefined) and returns what to write; a conflict reads and applies again. */
  async update(name: string, change: (current: T | undefined) => T, attempts = 11): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.get(name);
      const next = change(current);
      next.metadata = { ...next.metadata, resourceVersion: current?.metadata?.resourceVersion };
      try {
        return await this.write(next);
      } catch (err) {
        if (attempt >= attempts || !isConflict(err)) throw err; // 409: another writer wrote (or created) it first
      }
    }
  }

  /** A JSON merge patch (RFC 7386); with `metadata.resourceVersion` in it, only at that version. */
  mergePatch(name: string, patch: Record<string, unknown>, options: CallOptions = {}): Promise<T> {
    return this.kube.request<T>('PATCH', this.path(name), { ...options, body: patch, contentType: 'application/merge-patch+json' });
  }

  /** A JSON patch (RFC 6902); a `test` of `/metadata/resourceVersion` first makes it conditional. */
  jsonPatch(name: string, ops: unknown[], options: CallOptions = {}): Promise<T> {
    return this.kube.request<T>('PATCH', this.path(name), { ...options, body: ops, contentType: 'application/json-patch+json' });
  }

  /** The same, when the caller needs no answer (a revert: the object comes back through the watch): not parsed. */
  async jsonPatchUnread(name: string, ops: unknown[], options: CallOptions = {}): Promise<void> {
    await this.kube.request('PATCH', this.path(name), { ...options, body: ops, contentType: 'application/json-patch+json', discardResponse: true });
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

/** What the apiserver serves in one API group version (discovery), or undefined when it serves none. */
export async function discover(kube: KubeClient, group: string, version: string): Promise<Array<{ name: string; verbs?: string[] }> | undefined> {
  try {
    return (await kube.request<{ resources: Array<{ name: string; verbs?: string[] }> }>('GET', group ? `/apis/${group}/${version}` : `/api/${version}`, { timeoutMs: 10_000 })).resources;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** The apiserver's /version: reachable and authenticated, or an error that says why. */
export function serverVersion(kube: KubeClient, timeoutMs = 5000): Promise<{ gitVersion?: string }> {
  return kube.request<{ gitVersion?: string }>('GET', '/version', { timeoutMs });
}
