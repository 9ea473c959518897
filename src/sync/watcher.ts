import { CALLS_IN_FLIGHT, collectionPath, Informer, Resources, Slots, WorkQueue, type EventRecorder, type InformerEvent, type KubeClient, type KubeObject } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import {
  objectKey,
  packEntry,
  parseObjectKey,
  planRepair,
  resourceName,
  UNKNOWN_LAYERS,
  type Layers,
  type Policy,
  type RepairInput,
  type Stamper,
} from '../guard/index.js';
import type { CanonicalCache } from './cache.js';
import type { NamespaceLabelCache } from './namespace-labels.js';
import { Repairer, type Target } from './repairer.js';
import { READ_AGAIN, releaseVersion, type Pending } from './pending.js';
import { NOT_SHOWN, shownVersion, type ShownVersion } from './shown-version.js';
import type { CanonicalStore, Snapshot } from './store/index.js';
import { StoreWriter } from './store-writer.js';
import { TombstoneKeeper } from './tombstone-keeper.js';
import { watchScopes, type WatchScope } from './watch-scopes.js';

export interface WatcherDeps {
  kube: KubeClient;
  policy: Policy;
  cache: CanonicalCache;
  store: CanonicalStore;
  stamper: Stamper;
  metrics: Metrics;
  logger: Logger;
  events: EventRecorder;
  /**
   * A fresh verification of the admission layers' continuity (see attribution.ts); absent
   * (no cluster, tests): nothing vouches for unstamped changes.
   */
  verifyLayers?: () => Promise<Layers>;
  /**
   * The layers as last verified, when the guard layer was out of force then: a change can then
   * be reverted without waiting for a fresh verification (it cannot be trusted); undefined otherwise.
   */
  layersIfGuardBroken?: () => Layers | undefined;
  /** A watch silent this long is restarted (default 60 s). */
  silenceMs?: number;
  /** Namespace labels, when a rule selects namespaces by them. */
  namespaces?: Pick<NamespaceLabelCache, 'get' | 'ensure' | 'onChange'>;
}

interface WatchedResource extends WatchScope {
  /** Caches only each object's last version and the one it followed: enough to report a delete the watch missed and to order writes, small at 100,000 objects. */
  informer: Informer<KubeObject, ShownVersion>;
  /** Key prefix of the scope: group/resource/ or group/resource/namespace/. */
  prefix: string;
}

/** Failed attempts at one version before it is given up (counted); the next event or resync brings it back. */
const MAX_RETRIES = 10;
/**
 * The repairs' calls at once. In a burst each revert is one PATCH, which the busy apiserver
 * takes about 200 ms to answer (bench/revert); the client keeps a connection for each.
 */
const CONCURRENT_REPAIRS = CALLS_IN_FLIGHT.repairs;
/**
 * Versions handled at once: each planned as soon as the watch shows it, then, if it needs a
 * call, waiting for one of the CONCURRENT_REPAIRS slots with no more than what names the
 * object (releaseVersion). A version in sync (the revert coming back) or whose cache change
 * precedes its call (a trusted write learned) does not wait behind the reverts in flight.
 */
const CONCURRENT_VERSIONS = CONCURRENT_REPAIRS * 8;
/** How often the leader refreshes the repairs' connections: a third of the apiserver's 90 s idle timeout, so one skipped refresh (calls in flight) still keeps them. */
const KEEP_CONNECTIONS_OPEN_MS = 30_000;


/**
 * The second line of defence: watches every guarded resource, keeps the canonical cache
 * (which admission reads) warm on every replica, and — on the leader only — reverts
 * drift that bypassed admission, recreates objects deleted without a tombstone, re-stamps
 * trusted unstamped writes and persists the cache. Each version is planned by the pure
 * `planRepair` and executed by the Repairer; this class feeds it from the informers.
 */
export class Watcher {
  private readonly resources: WatchedResource[] = [];
  /** The newest version of each object to handle (newest wins); bounded by the objects. */
  private readonly queue: WorkQueue<Pending | undefined>;
  /** Namespaces that entered a selection, to be listed. */
  private readonly namespaceQueue: WorkQueue<NamespaceWork>;
  private readonly writer: StoreWriter;
  private readonly repairer: Repairer;
  /** The repairs' calls in flight (the repairer's patches and creates, the re-reads). */
  private readonly slots = new Slots(CONCURRENT_REPAIRS);
  private stopped = false;
  /** Per resource (group/resource): since when its watch has run without a restart. */
  private readonly watchingSince = new Map<string, number>();
  private readonly tombstones: TombstoneKeeper;
  /** Told by the lifecycle (onLeadershipChange): the leader alone writes, sweeps and repairs. */
  private leading = false;
  /** Stops the leader's refreshes of its connections (keepConnectionsOpen). */
  private stopKeepingConnections: (() => void) | undefined;
  private started = false;
  /**
   * Scope prefixes whose relist stores the raised knownAt of objects in sync, with the first list
   * that does (begun after the layers came into force: one running then would store each object twice).
   */
  private readonly raisingKnownAt = new Map<string, number>();

  constructor(private readonly d: WatcherDeps) {
    this.writer = new StoreWriter(d.store, d.cache, d.metrics, d.logger);
    this.repairer = new Repairer({ ...d, writer: this.writer, leading: () => this.leading, slots: this.slots });
    this.tombstones = new TombstoneKeeper({ ...d, unsaved: (key) => this.writer.unsaved(key), watchingSince: (groupResource) => this.watchingSince.get(groupResource) });
    const onError = (key: string, err: unknown, retryInMs: number | undefined) =>
      d.logger.warn(retryInMs === undefined ? 'giving up on this version; the next event or resync brings it back' : 'handling failed; retrying', { key, retryInMs, error: (err as Error).message });
    this.queue = new WorkQueue<Pending | undefined>((key, work) => this.process(key, work), {
      concurrency: CONCURRENT_VERSIONS,
      maxRetries: MAX_RETRIES,
      onError,
      // A failed version is retried as it was, one attempt more, unless a newer one came.
      retryWith: (work) => work && { ...work, attempt: work.attempt + 1 },
      metrics: d.metrics.queue('watcher'),
    });
    this.namespaceQueue = new WorkQueue<NamespaceWork>((_key, work) => this.listNamespace(work), { concurrency: CALLS_IN_FLIGHT.namespaceLists, maxRetries: MAX_RETRIES, onError, metrics: d.metrics.queue('namespaces') });
  }

  /** Loads the store (unless given its snapshot), then lists every guarded resource; resolves once all are listed. */
  async start(loaded?: Snapshot): Promise<void> {
    const snapshot = loaded ?? (await this.d.store.load());
    // Packed in place: the store's own copy of the state holds these same entries.
    for (const [key, entry] of snapshot.entries) this.d.cache.set(key, packEntry(entry));
    this.writer.loaded(snapshot.entries);
    for (const [key, tombstone] of snapshot.tombstones) this.d.cache.recordTombstone(key, tombstone);
    this.d.logger.info('canonical state loaded', { store: this.d.store.description, entries: snapshot.entries.size, tombstones: snapshot.tombstones.size });

    for (const scope of watchScopes(this.d.policy)) {
      const { group, version, resource, namespace } = scope;
      const label = resourceName(group, resource);
      const prefix = `${group}/${resource}/${namespace === undefined ? '' : `${namespace}/`}`;
      const informer = new Informer<KubeObject, ShownVersion>(
        this.d.kube,
        {
          path: collectionPath(group, version, resource, namespace),
          silenceMs: this.d.silenceMs,
          keyOf: (object) => objectKey(group, resource, object.metadata?.namespace, object.metadata?.name ?? ''),
          project: shownVersion,
          // Canonical values of objects the watch has not shown (loaded from the store, or
          // whose recreate was given up): a list without them reports them deleted.
          known: () => this.knownIn(prefix),
          // Objects from this list carry their storeListed flag already.
          onListed: (list) => list >= (this.raisingKnownAt.get(prefix) ?? Infinity) && this.raisingKnownAt.delete(prefix),
          onRestart: (reason) => {
            this.watchingSince.set(`${group}/${resource}`, Date.now());
            this.d.metrics.watchRestarts.inc({ resource: label });
            this.d.logger.warn('watch restarted', { resource: label, namespace, reason });
          },
        },
        // The informer's cache holds this version's projection when the handler runs: what it follows.
        (event) => this.onInformerEvent(scope, prefix, event, informer.get(event.key)?.follows),
      );
      this.resources.push({ ...scope, informer, prefix });
      this.watchingSince.set(`${group}/${resource}`, Date.now());
    }
    this.d.namespaces?.onChange((namespace, before, after) => this.onNamespaceChanged(namespace, before, after));
    this.writer.hold();
    await Promise.all(this.resources.map((r) => r.informer.start()));
    this.writer.release();
    this.started = true;
    if (this.leading && !this.stopped) this.tombstones.lead();
  }

  /** Keys with a canonical value in the scope, no version of them shown yet. */
  private *knownIn(prefix: string): Iterable<[string, ShownVersion]> {
    for (const key of this.d.cache.keys()) if (key.startsWith(prefix)) yield [key, NOT_SHOWN];
  }

  /** Stops watching; a leader first writes what it has not stored yet. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopKeepingConnections?.();
    this.tombstones.follow();
    for (const r of this.resources) r.informer.stop();
    await Promise.all([this.queue.stop(), this.namespaceQueue.stop()]);
    await this.writer.stop();
  }

  /**
   * An admission layer came into force (again): relist, so that every object in sync is
   * known canonical as of now, and store that, for continuity to start from.
   */
  onLayersEstablished(): void {
    if (this.stopped || !this.leading) return;
    for (const r of this.resources) {
      this.raisingKnownAt.set(r.prefix, r.informer.listsBegun + 1);
      r.informer.resync();
    }
  }

  /** A new leader re-examines everything, writes the store and sweeps tombstones; a follower stops writing. */
  onLeadershipChange(leading: boolean): void {
    if (this.stopped) return;
    this.leading = leading;
    this.stopKeepingConnections?.();
    this.stopKeepingConnections = undefined;
    if (!leading) {
      this.writer.follow();
      this.tombstones.follow();
      return;
    }
    // The leader reverts: a burst of drifts finds a connection open for each of its repairs.
    this.stopKeepingConnections = this.d.kube.keepConnectionsOpen(CONCURRENT_REPAIRS, KEEP_CONNECTIONS_OPEN_MS);
    this.writer.lead();
    if (this.started) this.tombstones.lead();
    for (const r of this.resources) r.informer.resync();
  }

  /** A namespace's labels changed: objects of a namespace that enters a selection are read, those of one that leaves it forgotten. */
  private onNamespaceChanged(namespace: string, before: Record<string, string> | undefined, after: Record<string, string> | undefined): void {
    if (this.stopped) return;
    for (const scope of this.resources.filter((r) => r.namespace === undefined)) {
      const rules = this.d.policy.rules.filter((r) => r.selection.byNamespaceLabels && r.config.group === scope.group && r.config.resource === scope.resource);
      const selectedBy = (labels: Record<string, string> | undefined) => labels !== undefined && rules.some((r) => r.selection.inNamespace(namespace, () => labels));
      if (!selectedBy(before) && selectedBy(after)) this.namespaceQueue.add(`${scope.group}/${scope.version}/${scope.resource}/${namespace}`, { ...scope, namespace });
      if (selectedBy(before) && !selectedBy(after)) {
        const prefix = `${scope.group}/${scope.resource}/${namespace}/`;
        for (const key of [...this.d.cache.keys()]) {
          if (!key.startsWith(prefix)) continue;
          this.d.cache.delete(key);
          this.writer.markDirty(key);
        }
        this.d.logger.info('namespace left the guarded selection: its objects are no longer guarded', { namespace, resource: resourceName(scope.group, scope.resource) });
      }
    }
  }

  /** Reads every object of a namespace that entered a selection, as a list would show them. */
  private async listNamespace({ group, version, resource, namespace }: NamespaceWork): Promise<void> {
    const list = await Resources.of<KubeObject>(this.d.kube, group, version, resource, namespace).listAt({}, { timeoutMs: 60_000 });
    this.d.logger.info('namespace entered a guarded selection', { namespace, resource: resourceName(group, resource) , objects: list.items.length });
    for (const item of list.items) {
      const key = objectKey(group, resource, item.metadata?.namespace, item.metadata?.name ?? '');
      this.enqueue({ group, resource, version }, key, 'ADDED', item, list.revision, false, undefined);
    }
  }

  private onInformerEvent(scope: WatchScope, prefix: string, event: InformerEvent<KubeObject, ShownVersion>, follows: string | undefined): void {
    if (!event.object) {
      // Missing from a complete list: deleted while the watch was not looking.
      const entry = this.d.cache.get(event.key);
      if (!entry) return;
      const { namespace, name } = parseObjectKey(event.key);
      const ghost: KubeObject = { apiVersion: entry.apiVersion, kind: entry.kind, metadata: { name, namespace: namespace || undefined, labels: entry.labels, uid: entry.uid } };
      this.enqueue(scope, event.key, 'DELETED', ghost, undefined, false, undefined);
      return;
    }
    this.enqueue(scope, event.key, event.type, event.object, event.listedAt, event.list !== undefined && event.list >= (this.raisingKnownAt.get(prefix) ?? Infinity), follows);
  }

  private enqueue(gvr: Pick<WatchScope, 'group' | 'version' | 'resource'>, key: string, type: Pending['type'], object: KubeObject, listedAt: string | undefined, storeListed: boolean, follows: string | undefined, namespaceRead = false): void {
    const namespace = object.metadata?.namespace;
    if (!namespaceRead && namespace && this.d.namespaces && this.d.policy.readsNamespaceLabels && !this.d.namespaces.get(namespace)) {
      // A namespace created a moment ago: read it first, so that its labels decide (unknown: selected).
      void this.d.namespaces.ensure(namespace).then(() => this.enqueue(gvr, key, type, object, listedAt, storeListed, follows, true));
      return;
    }
    const rule = this.d.policy.matchStored(gvr.group, gvr.resource, object, this.d.cache.get(key), this.d.namespaces?.get);
    if (!rule || rule.mode === 'off') return;
    const target: Target = { ...gvr, key, rule };
    this.queue.add(key, { target, type, object, seenAt: Date.now(), attempt: 0, listedAt, storeListed, follows });
  }

  /** Handles the newest version of `key`; a failure is retried by the queue (unless a newer one came). */
  private async process(key: string, work: Pending | undefined): Promise<void> {
    if (!work) return;
    if (work.stale) {
      // Decided on a version that changed meanwhile (a conflict, a backoff): read it again.
      const { target } = work;
      const { namespace, name } = parseObjectKey(key);
      const resources = Resources.of<KubeObject>(this.d.kube, target.group, target.version, target.resource, namespace);
      const object = await this.slots.use(() => resources.get(name));
      if (!object) return;
      work = { ...work, stale: false, object };
    }
    const outcome = await this.repair(work);
    if (outcome.again) this.requeue(work, outcome.afterMs);
  }

  /** Plans one version (verifying the layers when the plan needs them), then executes the plan. */
  private async repair(work: Pending) {
    const { target, object } = work;
    const deleted = work.type === 'DELETED';
    const uid = object.metadata?.uid;
    this.tombstones.observed(target.key, uid, !deleted && Boolean(object.metadata?.deletionTimestamp));
    const input: RepairInput = {
      key: target.key,
      rule: target.rule,
      object,
      deleted,
      entry: this.d.cache.get(target.key),
      tombstone: deleted ? await this.tombstones.lookup(target.key, uid) : this.d.cache.tombstone(target.key),
      leader: this.leading,
      stamper: this.d.stamper,
      now: Date.now(),
      selectionKeys: this.d.policy.selectionKeys(target.group, target.resource),
      listedAt: work.listedAt,
      storeListed: work.storeListed,
      follows: work.follows,
      // With the guard layer known to be out of force nothing can vouch for a change: where
      // only a revert can follow, it is planned at once (the common case behind admission).
      layersIfGuardBroken: this.d.layersIfGuardBroken?.(),
    };
    let plan = planRepair(input);
    if (plan.kind === 'verify-layers') {
      const layers = (await this.d.verifyLayers?.()) ?? UNKNOWN_LAYERS;
      plan = planRepair({ ...input, layers, now: Date.now() });
    }
    if (plan.kind === 'revert') releaseVersion(work);
    return this.repairer.execute(target, work.object, plan, work.seenAt, work.attempt);
  }

  /** Decides `key` again on a fresh read: now, or after `afterMs` (a backoff between reverts). */
  private requeue(work: Pending, afterMs?: number): void {
    if (this.stopped) return;
    this.queue.offer(work.target.key, { ...work, ...READ_AGAIN, type: 'MODIFIED', object: {}, attempt: work.attempt + 1 }, afterMs);
  }
}

/** A namespace that entered a selection: its objects of one resource are to be read. */
type NamespaceWork = Pick<WatchScope, 'group' | 'version' | 'resource'> & { namespace: string };
