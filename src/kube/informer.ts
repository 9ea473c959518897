import type { KubeClient } from './client.js';
import { Reflector, type ListedObject, type ReflectorOptions } from './reflector.js';

/** One change to the informer's cache, after the cache took it. */
export interface InformerEvent<T, C> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  key: string;
  /** The object as the apiserver sent it; absent for a DELETED inferred from a (re)list that no longer shows the key. */
  object?: T;
  /** What the cache held for the key before this event. */
  previous?: C;
  /** For an object from a list: the revision the list is a consistent snapshot of. */
  listedAt?: string;
  /** For an object from a list: the list's number (see `listsBegun`). */
  list?: number;
}

export interface InformerOptions<T, C> extends ReflectorOptions {
  /** The cache key of an object (default: `namespace/name`, or `name` when cluster-scoped). */
  keyOf?: (object: T) => string;
  /**
   * What the cache keeps of an object (default: the object), given what it kept of the key
   * before and whether a list (not the watch) shows it. A projection keeps a large
   * collection's cache small.
   */
  project?: (object: T, previous: C | undefined, listed: boolean) => C;
  /**
   * Keys the caller knows exist though the watch may not have shown them (state loaded from
   * a store): read before every list, so that a list without them reports them DELETED.
   */
  known?: () => Iterable<[string, C]>;
  onRestart?: (reason: string) => void;
  /**
   * After each complete (re)list, with its number, once its events (DELETED ones included)
   * were handled; not after one a resync superseded while it ran (the list that follows calls it).
   */
  onListed?: (list: number) => void;
}

const defaultKey = (object: ListedObject) => {
  const { namespace, name } = object.metadata ?? {};
  return namespace ? `${namespace}/${name ?? ''}` : (name ?? '');
};

/**
 * A reflector with the cache half: get, list, has-synced, and a DELETED for every cached key
 * that a complete (re)list no longer shows (deleted while the watch was not looking). The
 * handler runs after the cache took the change, so that it reads the new state from it.
 */
export class Informer<T extends ListedObject, C = T> {
  private readonly cache = new Map<string, C>();
  private readonly reflector: Reflector<T>;
  /** Keys seen so far in the list in progress. */
  private listing: Set<string> | undefined;
  private readonly keyOf: (object: T) => string;
  private readonly project: (object: T, previous: C | undefined, listed: boolean) => C;

  constructor(
    kube: KubeClient,
    private readonly options: InformerOptions<T, C>,
    private readonly handler: (event: InformerEvent<T, C>) => void = () => undefined,
  ) {
    this.keyOf = options.keyOf ?? defaultKey;
    this.project = options.project ?? ((object) => object as unknown as C);
    this.reflector = new Reflector<T>(kube, options, {
      onListPage: (items, last, revision, first, superseded, list) => this.onListPage(items, last, revision, first, superseded, list),
      onEvent: (type, object) => this.onEvent(type, object),
      onRestart: options.onRestart,
    });
  }

  /** Runs until stop(); resolves after the first complete list. */
  start(): Promise<void> {
    return this.reflector.start();
  }

  stop(): void {
    this.reflector.stop();
  }

  /** Lists again now: every object is reported anew, and what the list misses as DELETED. */
  resync(): void {
    this.reflector.resync();
  }

  get hasSynced(): boolean {
    return this.reflector.hasSynced;
  }

  /** Lists begun so far, one in progress included: a resync asked for now is answered by list `listsBegun + 1` or a later one. */
  get listsBegun(): number {
    return this.reflector.listsBegun;
  }

  get(key: string): C | undefined {
    return this.cache.get(key);
  }

  has(key: string): boolean {
    return this.cache.has(key);
  }

  list(): C[] {
    return [...this.cache.values()];
  }

  keys(): IterableIterator<string> {
    return this.cache.keys();
  }

  get size(): number {
    return this.cache.size;
  }

  private onListPage(items: T[], last: boolean, revision: string, first: boolean, superseded: boolean, list: number): void {
    if (first || !this.listing) {
      this.listing = new Set();
      for (const [key, value] of this.options.known?.() ?? []) if (!this.cache.has(key)) this.cache.set(key, value);
    }
    for (const object of items) {
      const key = this.keyOf(object);
      this.listing.add(key);
      this.take(this.cache.has(key) ? 'MODIFIED' : 'ADDED', key, object, { listedAt: revision, list });
    }
    if (!last) return;
    const present = this.listing;
    this.listing = undefined;
    for (const [key, previous] of [...this.cache]) {
      if (present.has(key)) continue;
      this.cache.delete(key);
      this.handler({ type: 'DELETED', key, previous });
    }
    if (!superseded) this.options.onListed?.(list);
  }

  private onEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void {
    this.take(type, this.keyOf(object), object);
  }

  private take(type: InformerEvent<T, C>['type'], key: string, object: T, listed?: { listedAt: string; list: number }): void {
    const previous = this.cache.get(key);
    if (type === 'DELETED') this.cache.delete(key);
    else this.cache.set(key, this.project(object, previous, listed !== undefined));
    this.handler({ type, key, object, previous, ...listed });
  }
}
