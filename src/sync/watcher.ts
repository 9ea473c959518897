import { collectionPath, EventRecorder, KubeError, WorkQueue, objectPath, parseObjectKey, Reflector, type KubeClient, type KubeObject } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import {
  attributeChange,
  attributeDelete,
  confirms,
  entryValues,
  expired,
  laterRevision,
  objectKey,
  observe,
  parsePointer,
  resolve,
  RevertThrottle,
  selectionRestoreOps,
  setAt,
  stampPatch,
  TOMBSTONE_CONFIRM_MS,
  UNKNOWN_LAYERS,
  type Attribution,
  type CanonicalEntry,
  type Layers,
  type Observation,
  type PatchOp,
  type Policy,
  type Rule,
  type Stamper,
  type Tombstone,
} from '../guard/index.js';
import type { CanonicalCache } from './cache.js';
import type { NamespaceLabelCache } from './namespace-labels.js';
import type { CanonicalStore, Snapshot } from './store/index.js';
import { SPEC_GUARD } from '../names.js';

export interface WatcherDeps {
  kube: KubeClient;
  policy: Policy;
  cache: CanonicalCache;
  store: CanonicalStore;
  stamper: Stamper;
  metrics: Metrics;
  logger: Logger;
  events: EventRecorder;
  isLeader: () => boolean;
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

/** One list+watch: a resource, cluster-wide or in one namespace. */
interface WatchScope {
  group: string;
  version: string;
  resource: string;
  /** Undefined: every namespace. */
  namespace?: string;
}

interface WatchedResource extends WatchScope {
  reflector: Reflector<KubeObject>;
}

/**
 * The watches the policy needs: per namespace when every rule of a resource names its
 * namespaces (so spec-guard needs no cluster-wide read, e.g. of Secrets), else one
 * cluster-wide watch.
 */
export function watchScopes(policy: Policy): WatchScope[] {
  const byResource = new Map<string, { group: string; version: string; resource: string; namespaces: Set<string> | undefined }>();
  for (const rule of policy.rules) {
    const { group, version, resource, namespaces } = rule.config;
    const id = `${group}/${version}/${resource}`;
    const current = byResource.get(id);
    if (!current) byResource.set(id, { group, version, resource, namespaces: namespaces ? new Set(namespaces) : undefined });
    else if (!namespaces) current.namespaces = undefined;
    else namespaces.forEach((ns) => current.namespaces?.add(ns));
  }
  return [...byResource.values()].flatMap(({ namespaces, ...gvr }) =>
    namespaces ? [...namespaces].map((namespace) => ({ ...gvr, namespace })) : [gvr],
  );
}

const FIELD_MANAGER = SPEC_GUARD;
/** Failed attempts at one version before it is given up (counted); the next event or resync brings it back. */
const MAX_RETRIES = 10;
/** Store writes wait at least this long, and at least twice as long as the last write took. */
const STORE_FLUSH_MS = 100;

/** How a move out of the selection is named in Events and logs. */
const SELECTION = '/metadata (labels or annotations that select it)';

const isRetryableConflict = (err: unknown) => err instanceof KubeError && (err.status === 409 || err.status === 422);
const isGone = (err: unknown) => err instanceof KubeError && err.status === 404;



/**
 * The second line of defence: watches every guarded resource, keeps the canonical cache
 * (which admission reads) warm on every replica, and — on the leader only — reverts
 * drift that bypassed admission, recreates objects deleted without a tombstone, re-stamps
 * trusted unstamped writes and persists the cache.
 */
export class Watcher {
  private readonly resources: WatchedResource[] = [];
  /** The newest state of each key waiting to be handled (newest wins); bounded by the objects. */
  private readonly latest = new Map<string, Pending>();
  private readonly queue: WorkQueue;
  private dirty = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  private lastFlushMs = 0;
  /** Keys drifted and not yet reverted, for the drifted-objects gauge. */
  private readonly drifted = new Set<string>();
  private flushing: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Per resource (group/resource): since when its watch has run without a restart. */
  private readonly watchingSince = new Map<string, number>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly throttle = new RevertThrottle();

  constructor(private readonly d: WatcherDeps) {
    this.queue = new WorkQueue((key) => this.process(key), {
      maxRetries: MAX_RETRIES,
      onError: (key, err, retryInMs) => {
        if (retryInMs === undefined) d.metrics.workGivenUp.inc({ queue: 'watcher' });
        d.logger.warn(retryInMs === undefined ? 'giving up on this version; the next event or resync brings it back' : 'handling failed; retrying', { key, retryInMs, error: (err as Error).message });
      },
    });
  }

  /** Loads the store (unless given its snapshot), then lists every guarded resource; resolves once all are listed. */
  async start(loaded?: Snapshot): Promise<void> {
    const snapshot = loaded ?? (await this.d.store.load());
    for (const [key, entry] of snapshot.entries) this.d.cache.set(key, entry);
    for (const [key, tombstone] of snapshot.tombstones) this.d.cache.recordTombstone(key, tombstone);
    this.d.logger.info('canonical state loaded', { store: this.d.store.description, entries: snapshot.entries.size, tombstones: snapshot.tombstones.size });

    for (const scope of watchScopes(this.d.policy)) {
      const { group, version, resource, namespace } = scope;
      const label = `${resource}.${group}`;
      const reflector = new Reflector<KubeObject>(
        this.d.kube,
        { path: collectionPath(group, version, resource, namespace), silenceMs: this.d.silenceMs },
        {
          onListPage: (items, last, revision) => this.onListPage(scope, items, last, revision),
          onEvent: (type, object) => this.onEvent(group, resource, version, type, object, Date.now()),
          onRestart: (reason) => {
            this.watchingSince.set(`${group}/${resource}`, Date.now());
            this.d.metrics.watchRestarts.inc({ resource: label });
            this.d.logger.warn('watch restarted', { resource: label, namespace, reason });
          },
        },
      );
      this.resources.push({ ...scope, reflector });
      this.watchingSince.set(`${group}/${resource}`, Date.now());
    }
    this.d.namespaces?.onChange((namespace, before, after) => this.onNamespaceChanged(namespace, before, after));
    await Promise.all(this.resources.map((r) => r.reflector.start()));
    this.sweepTimer = setInterval(() => void this.sweepTombstones(), TOMBSTONE_CONFIRM_MS / 2);
    this.sweepTimer.unref();
  }

  /**
   * The leader drops the tombstones that the watch, watching throughout, went past without
   * seeing their delete: forged ones, and deletes that did not happen (refused later on).
   */
  private async sweepTombstones(): Promise<void> {
    if (!this.d.isLeader() || this.stopped) return;
    const now = Date.now();
    let stored: Map<string, Tombstone>;
    try {
      stored = await this.d.store.readTombstones();
    } catch (err) {
      this.d.metrics.storeErrors.inc({ operation: 'read-tombstone' });
      this.d.logger.warn('reading the tombstones failed', { error: (err as Error).message });
      return;
    }
    for (const [key, tombstone] of this.d.cache.tombstoneList()) if (!stored.has(key)) stored.set(key, tombstone);
    this.d.metrics.tombstones.set(stored.size);
    // A confirmed delete keeps its tombstone until the removal of its entry is stored: a
    // restart in between must not find the entry without it (and recreate the object).
    const gone = [...stored].filter(([key, tombstone]) => {
      const { group, resource } = parseObjectKey(key);
      if (this.d.cache.get(key) && this.dirty.has(key)) return false;
      return expired(tombstone, now, this.watchingSince.get(`${group}/${resource}`) ?? now);
    });
    for (const [key, tombstone] of gone) {
      this.d.cache.clearTombstone(key);
      this.d.logger.info('tombstone expired: the watch never saw its delete', { key, at: tombstone.at });
    }
    await Promise.all(gone.map(([key]) => this.d.store.removeTombstone(key))).catch((err: Error) =>
      this.d.logger.warn('removing expired tombstones failed; the next sweep retries', { error: err.message }),
    );
  }

  /** Stops watching; a leader first writes what it has not stored yet. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweepTimer);
    for (const r of this.resources) r.reflector.stop();
    await this.queue.stop();
    clearTimeout(this.flushTimer);
    await this.flushing;
    await this.flush();
  }

  /** List prefixes whose relist stores the raised knownAt of objects in sync. */
  private readonly raisingKnownAt = new Set<string>();

  /**
   * An admission layer came into force (again): relist, so that every object in sync is
   * known canonical as of now, and store that, for continuity to start from.
   */
  onLayersEstablished(): void {
    if (this.stopped || !this.d.isLeader()) return;
    for (const r of this.resources) {
      this.raisingKnownAt.add(`${r.group}/${r.resource}/${r.namespace === undefined ? '' : `${r.namespace}/`}`);
      r.reflector.resync();
    }
  }

  /** A new leader re-examines everything and rewrites the store. */
  onLeadershipChange(leading: boolean): void {
    if (!leading || this.stopped) return;
    // A store other replicas write may hold another leader's view: rewrite it all. One only
    // this replica writes holds what it loaded: the changes seen while following are enough.
    for (const key of this.d.store.shared ? this.d.cache.keys() : this.unsavedWhileFollowing) this.dirty.add(key);
    this.unsavedWhileFollowing.clear();
    this.scheduleFlush();
    for (const r of this.resources) r.reflector.resync();
  }

  private ruleFor(group: string, resource: string, object: KubeObject, key: string): Rule | undefined {
    const rule = this.d.policy.matchStored(group, resource, object, this.d.cache.get(key), this.d.namespaces?.get);
    return rule && rule.mode !== 'off' ? rule : undefined;
  }

  /** A namespace's labels changed: objects of a namespace that enters a selection are read, those of one that leaves it forgotten. */
  private onNamespaceChanged(namespace: string, before: Record<string, string> | undefined, after: Record<string, string> | undefined): void {
    if (this.stopped) return;
    for (const scope of this.resources.filter((r) => r.namespace === undefined)) {
      const rules = this.d.policy.rules.filter((r) => r.selection.byNamespaceLabels && r.config.group === scope.group && r.config.resource === scope.resource);
      const selectedBy = (labels: Record<string, string> | undefined) => labels !== undefined && rules.some((r) => r.selection.inNamespace(namespace, () => labels));
      if (!selectedBy(before) && selectedBy(after)) this.queue.add(`namespace:${scope.group}/${scope.version}/${scope.resource}/${namespace}`);
      if (selectedBy(before) && !selectedBy(after)) {
        const prefix = `${scope.group}/${scope.resource}/${namespace}/`;
        for (const key of [...this.d.cache.keys()]) {
          if (!key.startsWith(prefix)) continue;
          this.d.cache.delete(key);
          this.markDirty(key);
        }
        this.d.logger.info('namespace left the guarded selection: its objects are no longer guarded', { namespace, resource: `${scope.resource}.${scope.group}` });
      }
    }
  }

  /** Reads every object of a namespace that entered a selection, as a list would show them. */
  private async listNamespace(work: string): Promise<void> {
    const [group, version, resource, namespace] = work.slice('namespace:'.length).split('/') as [string, string, string, string];
    const list = await this.d.kube.request<{ metadata: { resourceVersion: string }; items: KubeObject[] }>('GET', collectionPath(group, version, resource, namespace), { timeoutMs: 60_000 });
    this.d.logger.info('namespace entered a guarded selection', { namespace, resource: `${resource}.${group}`, objects: list.items.length });
    for (const item of list.items) this.onEvent(group, resource, version, 'ADDED', item, Date.now(), list.metadata.resourceVersion);
  }

  private keyOf(group: string, resource: string, object: KubeObject): string {
    return objectKey(group, resource, object.metadata?.namespace, object.metadata?.name ?? '');
  }

  /** Keys seen so far in the list in progress, per resource. */
  private readonly listing = new Map<string, Set<string>>();

  private onListPage(scope: WatchScope, items: KubeObject[], last: boolean, revision: string): void {
    const { group, resource, version } = scope;
    const prefix = `${group}/${resource}/${scope.namespace === undefined ? '' : `${scope.namespace}/`}`;
    const present = this.listing.get(prefix) ?? new Set<string>();
    this.listing.set(prefix, present);
    for (const item of items) {
      present.add(this.keyOf(group, resource, item));
      this.onEvent(group, resource, version, 'ADDED', item, Date.now(), revision);
    }
    if (!last) return;
    this.listing.delete(prefix);
    this.raisingKnownAt.delete(prefix);
    // Known objects missing from a complete list were deleted while the watch was not looking.
    for (const key of [...this.d.cache.keys()]) {
      if (!key.startsWith(prefix) || present.has(key)) continue;
      const entry = this.d.cache.get(key)!;
      const { namespace, name } = parseObjectKey(key);
      const ghost: KubeObject = { apiVersion: entry.apiVersion, kind: entry.kind, metadata: { name, namespace: namespace || undefined, labels: entry.labels, uid: entry.uid } };
      this.onEvent(group, resource, version, 'DELETED', ghost, Date.now());
    }
  }

  private onEvent(group: string, resource: string, version: string, type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject, seenAt: number, listedAt?: string, namespaceRead = false): void {
    const namespace = object.metadata?.namespace;
    if (!namespaceRead && namespace && this.d.namespaces && this.d.policy.readsNamespaceLabels && !this.d.namespaces.get(namespace)) {
      // A namespace created a moment ago: read it first, so that its labels decide (unknown: selected).
      void this.d.namespaces.ensure(namespace).then(() => this.onEvent(group, resource, version, type, object, seenAt, listedAt, true));
      return;
    }
    const key = this.keyOf(group, resource, object);
    const rule = this.ruleFor(group, resource, object, key);
    if (!rule) return;
    const ref: Ref = { group, resource, version, key, rule, listedAt };
    this.latest.set(key, { ref, type, object, seenAt, attempt: 0 });
    this.queue.add(key);
  }

  /** Handles the newest state of `key`; a failure puts it back (unless a newer one came) for the queue to retry. */
  private async process(key: string): Promise<void> {
    if (key.startsWith('namespace:')) return this.listNamespace(key);
    let work = this.latest.get(key);
    if (!work) return;
    this.latest.delete(key);
    try {
      if (work.stale) {
        // Decided on a version that changed meanwhile (a conflict, a backoff): read it again.
        const { namespace, name } = parseObjectKey(key);
        try {
          work = { ...work, stale: false, object: await this.d.kube.request<KubeObject>('GET', objectPath(work.ref.group, work.ref.version, work.ref.resource, namespace, name)) };
        } catch (err) {
          if (isGone(err)) return;
          throw err;
        }
      }
      if (work.type === 'DELETED') await this.handleDeleted(work.ref, work.object.metadata?.uid);
      else await this.handle(work.ref, work.object, work.seenAt, work.attempt);
    } catch (err) {
      if (!this.latest.has(key)) this.latest.set(key, { ...work, attempt: work.attempt + 1 });
      throw err;
    }
  }

  /** Decides `key` again on a fresh read: now, or after `afterMs` (a backoff between reverts). */
  private requeue(ref: Ref, seenAt: number, attempt: number, afterMs?: number): void {
    if (this.stopped) return;
    if (!this.latest.has(ref.key)) this.latest.set(ref.key, { ref, type: 'MODIFIED', object: {}, seenAt, attempt, stale: true });
    if (afterMs) this.queue.addAfter(ref.key, afterMs);
    else this.queue.add(ref.key);
  }

  /** Keys changed while this replica did not lead (bounded by the objects): stored once it leads. */
  private readonly unsavedWhileFollowing = new Set<string>();

  private markDirty(key: string): void {
    if (!this.d.isLeader()) {
      this.unsavedWhileFollowing.add(key);
      return;
    }
    this.dirty.add(key);
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.stopped) return;
    // Under churn, write less often, not more: the next write waits twice as long as the last took.
    this.flushTimer = setTimeout(() => {
      this.flushing = this.flushing.then(() => this.flush());
    }, Math.max(STORE_FLUSH_MS, 2 * this.lastFlushMs));
  }

  private async flush(): Promise<void> {
    this.flushTimer = undefined;
    if (!this.d.isLeader() || this.dirty.size === 0) return;
    const started = Date.now();
    const changed = this.dirty;
    this.dirty = new Set();
    const entries = new Map<string, CanonicalEntry>();
    for (const key of this.d.cache.keys()) entries.set(key, this.d.cache.get(key)!);
    try {
      await this.d.store.saveEntries(entries, changed);
    } catch (err) {
      this.d.metrics.storeErrors.inc({ operation: 'save' });
      this.d.logger.error('saving the canonical state failed; retrying', { store: this.d.store.description, error: (err as Error).message });
      for (const key of changed) this.dirty.add(key);
      setTimeout(() => this.scheduleFlush(), 2000).unref();
    }
    this.d.metrics.storeUsage.set(this.d.store.usage());
    const counts = new Map<string, number>();
    for (const key of entries.keys()) {
      const { group, resource } = parseObjectKey(key);
      counts.set(`${resource}.${group}`, (counts.get(`${resource}.${group}`) ?? 0) + 1);
    }
    for (const [resource, count] of counts) this.d.metrics.canonicalObjects.set({ resource }, count);
    this.lastFlushMs = Date.now() - started;
  }

  private async patch(ref: Ref, object: KubeObject, ops: PatchOp[]): Promise<KubeObject> {
    const meta = object.metadata!;
    return this.d.kube.request<KubeObject>('PATCH', objectPath(ref.group, ref.version, ref.resource, meta.namespace, meta.name!), {
      body: [{ op: 'test', path: '/metadata/resourceVersion', value: meta.resourceVersion }, ...ops],
      contentType: 'application/json-patch+json',
      query: { fieldManager: FIELD_MANAGER },
      timeoutMs: 10_000,
    });
  }

  private setDrifted(ref: Ref, drifted: boolean): void {
    if (drifted === this.drifted.has(ref.key)) return;
    if (drifted) this.drifted.add(ref.key);
    else this.drifted.delete(ref.key);
    const prefix = `${ref.group}/${ref.resource}/`;
    this.d.metrics.driftedObjects.set({ resource: `${ref.resource}.${ref.group}` }, [...this.drifted].filter((k) => k.startsWith(prefix)).length);
  }

  private async handle(ref: Ref, object: KubeObject, seenAt: number, attempt: number): Promise<void> {
    const { key, rule } = ref;
    if (!object.metadata?.deletionTimestamp && !rule.selection.selects(object.metadata ?? {})) return this.handleEscape(ref, object, seenAt, attempt);
    let obs: Observation = observe(object, rule, key, this.d.cache.get(key), this.d.cache.tombstone(key), this.d.stamper);
    const leader = this.d.isLeader();
    if (obs.kind === 'changed') {
      // Only the leader attributes (it alone acts on the answer); a follower waits for the stamp.
      if (!leader) return;
      // With the guard layer known to be out of force nothing can vouch for the change: where the
      // rule reverts what no layer vouches for, revert at once (the common case behind admission).
      const broken = rule.config.blindWindow.changes === 'revert' && obs.previous ? this.d.layersIfGuardBroken?.() : undefined;
      const layers = broken ?? (await this.d.verifyLayers?.()) ?? UNKNOWN_LAYERS;
      const plan = resolve(obs, object, rule, key, layers, this.d.stamper, Date.now());
      if (plan.attribution === 'unattributed') this.reportUnattributed(ref, object, obs.changed, plan.action);
      if (plan.action === 'leave') {
        this.d.logger.debug('no canonical value known; leaving the object alone', { key, attribution: plan.attribution });
        return;
      }
      if (plan.action === 'learn') await this.learn(ref, object, plan.entry, true, seenAt, attempt);
      else await this.revert(ref, object, { entry: plan.entry, changed: obs.changed }, plan.attribution, seenAt, attempt);
      return;
    }
    this.setDrifted(ref, obs.kind === 'drift' && rule.mode !== 'warn');
    switch (obs.kind) {
      case 'ignore':
      case 'unknown':
        return;
      case 'learn':
        await this.learn(ref, object, obs.entry, false, seenAt, attempt);
        return;
      case 'in-sync': {
        this.d.cache.set(key, this.asListed(ref, obs.entry));
        if (obs.restoreStamp && leader && rule.mode !== 'warn') {
          await this.tryPatch(ref, object, stampPatch(object, obs.entry.stamp), seenAt, attempt, 'stamp');
        }
        return;
      }
      case 'drift':
        await this.revert(ref, object, obs, 'untrusted', seenAt, attempt);
        return;
    }
  }

  /**
   * A guarded object no longer in its selection (its labels or annotations changed behind
   * admission, which refuses such a write from anyone untrusted): forgotten when the guard
   * layer vouches that a trusted writer moved it, else moved back, its guarded paths restored.
   */
  private async handleEscape(ref: Ref, object: KubeObject, seenAt: number, attempt: number): Promise<void> {
    const { key, rule } = ref;
    const entry = this.d.cache.get(key);
    if (!entry || !this.d.isLeader()) return;
    const sameCopy = entry.uid === object.metadata?.uid ? entry : undefined;
    const attribution = rule.mode === 'warn' ? 'untrusted' : attributeChange((await this.d.verifyLayers?.()) ?? UNKNOWN_LAYERS, sameCopy, object, false);
    if (attribution === 'unattributed') this.reportUnattributed(ref, object, [SELECTION], rule.config.blindWindow.changes === 'accept' ? 'learn' : 'revert');
    if (attribution === 'trusted' || (attribution === 'unattributed' && rule.config.blindWindow.changes === 'accept')) {
      this.d.cache.delete(key);
      this.markDirty(key);
      this.d.logger.info('guarded object moved out of its selection by a trusted write: no longer guarded', { key });
      return;
    }
    const canonical = { labels: entry.labels, annotations: entry.annotations };
    const moveBack = selectionRestoreOps(this.d.policy.selectionKeys(ref.group, ref.resource), canonical, object.metadata ?? {});
    const changed = [...rule.view.changedPointers(entryValues(entry), object), SELECTION];
    await this.revert(ref, object, { entry, changed }, attribution, seenAt, attempt, moveBack);
  }

  /**
   * An object a list shows canonical is known canonical as of the list's revision, which
   * continuity may start from; after a layer came into force that is stored.
   */
  private asListed(ref: Ref, entry: CanonicalEntry): CanonicalEntry {
    if (!ref.listedAt) return entry;
    for (const prefix of this.raisingKnownAt) if (ref.key.startsWith(prefix)) this.markDirty(ref.key);
    return { ...entry, knownAt: laterRevision(entry.knownAt ?? entry.resourceVersion, ref.listedAt) };
  }

  /** A new canonical value: from a fresh stamp, or attributed to a trusted writer (`restamp`: stamp it now). */
  private async learn(ref: Ref, object: KubeObject, learned: CanonicalEntry, restamp: boolean, seenAt: number, attempt: number): Promise<void> {
    const { key } = ref;
    this.setDrifted(ref, false);
    const previous = this.d.cache.get(key);
    const entry = restamp ? learned : this.asListed(ref, learned);
    this.d.cache.set(key, entry);
    // A new canonical value (not spec-guard's own revert coming back) ends any fight. A new
    // sequence for the same value need not be stored: a replayed stamp of another value is
    // older than the stored sequence of the value it replaced.
    if (!previous || previous.viewHash !== entry.viewHash) {
      this.markDirty(key);
      this.throttle.forget(key);
    }
    const leader = this.d.isLeader();
    const tombstone = this.d.cache.tombstone(key);
    if (tombstone && tombstone.uid !== object.metadata?.uid) {
      // A trusted write brought the object back: the earlier delete no longer applies.
      this.d.cache.clearTombstone(key);
      if (leader) await this.d.store.removeTombstone(key);
    }
    if (restamp && leader) await this.tryPatch(ref, object, stampPatch(object, entry.stamp), seenAt, attempt, 'restamp');
  }

  /** Counts, logs and reports (Event) a change or delete that no layer vouches for. */
  private reportUnattributed(ref: Ref, object: KubeObject, changed: string[], action: string): void {
    const change = changed.length ? 'update' : 'delete';
    const done = { learn: 'accepted (blindWindow.changes: accept)', revert: 'reverted (blindWindow.changes: revert)', leave: 'left alone (no canonical value is known)', recreate: 'recreated (blindWindow.deletes: recreate)', 'keep-deleted': 'kept deleted (blindWindow.deletes: keep-deleted)' }[action] ?? action;
    this.d.metrics.unattributed.inc({ resource: `${ref.resource}.${ref.group}`, change, action });
    const what = change === 'update' ? `A change to ${changed.join(', ')} without a valid, fresh stamp` : 'A delete without a tombstone';
    const message = `${what} was made while spec-guard's admission layers were not in force (a blind window): it cannot be attributed; ${done}`;
    this.d.events.record(this.involved(object), 'Warning', 'UnattributedChange', message);
    this.d.logger.warn('unattributed change in a blind window', { key: ref.key, change, changed, action });
  }

  private async revert(ref: Ref, object: KubeObject, obs: { entry: CanonicalEntry; changed: string[] }, attribution: Attribution, seenAt: number, attempt: number, moveBack: PatchOp[] = []): Promise<void> {
    const { key, rule } = ref;
    this.setDrifted(ref, rule.mode !== 'warn');
    if (attempt === 0) this.d.metrics.driftDetected.inc({ source: 'watch', resource: `${ref.resource}.${ref.group}` });
    const who = attribution === 'unattributed' ? 'An unattributed change (made in a blind window)' : 'An untrusted change';
    const pointers = obs.changed.join(', ');
    const involved = this.involved(object);
    const leader = this.d.isLeader();
    if (rule.mode === 'warn') {
      if (leader) this.d.events.record(involved, 'Warning', 'SpecDriftDetected', `${who} to ${pointers}; left in place (warn mode)`);
      return;
    }
    if (!leader) return;
    const { waitMs, fightStarted } = this.throttle.decide(key, Date.now());
    if (waitMs > 0) {
      // Fighting another writer: revert the version there is once the backoff is over.
      this.requeue(ref, seenAt, attempt, waitMs);
      return;
    }
    if (fightStarted) {
      this.d.metrics.revertBackoffs.inc({ resource: `${ref.resource}.${ref.group}` });
      this.d.events.record(involved, 'Warning', 'SpecDriftFight', `Another writer keeps changing ${pointers}; spec-guard keeps reverting, each time after a longer wait (up to 5 min)`);
      this.d.logger.warn('another writer keeps changing a guarded object; reverts back off', { key });
    }
    const ops = [...rule.view.restoreOps(entryValues(obs.entry), object), ...moveBack, ...stampPatch(object, obs.entry.stamp)];
    if (await this.tryPatch(ref, object, ops, seenAt, attempt, 'revert')) {
      this.d.metrics.reverts.inc({ resource: `${ref.resource}.${ref.group}`, result: 'reverted' });
      this.d.metrics.revertLatency.observe((Date.now() - seenAt) / 1000);
      this.d.events.record(involved, 'Warning', 'SpecDriftReverted', `Reverted: ${who.toLowerCase()} to ${pointers}; it is owned by the source of truth`);
      this.d.logger.info('drift reverted', { key, changed: obs.changed, attribution, ms: Date.now() - seenAt });
    }
  }

  /**
   * Patches with a resourceVersion test. On a conflict the object is read and decided again
   * (a concurrent write, trusted or not, is never clobbered); other errors go to the queue,
   * which retries with backoff. True when this patch landed.
   */
  private async tryPatch(ref: Ref, object: KubeObject, ops: PatchOp[], seenAt: number, attempt: number, what: string): Promise<boolean> {
    if (ops.length === 0) return false;
    try {
      await this.patch(ref, object, ops);
      return true;
    } catch (err) {
      if (isGone(err)) return false;
      if (isRetryableConflict(err)) {
        this.requeue(ref, seenAt, attempt + 1);
        return false;
      }
      if (what === 'revert') this.d.metrics.reverts.inc({ resource: `${ref.resource}.${ref.group}`, result: 'error' });
      throw new Error(`${what} failed: ${(err as Error).message}`);
    }
  }

  private involved(object: KubeObject) {
    return {
      apiVersion: object.apiVersion ?? '',
      kind: object.kind ?? '',
      name: object.metadata?.name ?? '',
      namespace: object.metadata?.namespace,
      uid: object.metadata?.uid,
    };
  }

  private async handleDeleted(ref: Ref, uid: string | undefined): Promise<void> {
    const { key, rule } = ref;
    const entry = this.d.cache.get(key);
    if (!entry) return;
    // The admitting replica may be another one: its tombstone is in the store.
    let tombstone = this.d.cache.tombstone(key);
    if (!confirms(tombstone, uid)) {
      try {
        tombstone = (await this.d.store.readTombstones()).get(key);
      } catch (err) {
        this.d.metrics.storeErrors.inc({ operation: 'read-tombstone' });
        throw err;
      }
    }
    const forget = (by: string) => {
      this.d.cache.delete(key);
      this.markDirty(key);
      this.d.logger.info('guarded object deleted', { key, by });
    };
    if (confirms(tombstone, uid)) {
      // Kept a while: stamps issued before this delete are stale on a recreated copy.
      if (tombstone) this.d.cache.recordTombstone(key, tombstone);
      return forget('trusted (tombstone)');
    }
    if (rule.config.deletes === 'allow' || rule.mode === 'warn') return forget(`allowed by the rule (${rule.mode}, deletes: ${rule.config.deletes})`);
    if (!this.d.isLeader()) return;
    const attribution = attributeDelete((await this.d.verifyLayers?.()) ?? UNKNOWN_LAYERS, entry);
    if (attribution === 'trusted') return forget('trusted (the guard layer held throughout: no one else could delete it)');
    const { namespace, name } = parseObjectKey(key);
    const ghost: KubeObject = { apiVersion: entry.apiVersion, kind: entry.kind, metadata: { name, namespace: namespace || undefined, uid: entry.uid } };
    if (attribution === 'unattributed') {
      const action = rule.config.blindWindow.deletes;
      this.reportUnattributed(ref, ghost, [], action);
      if (action === 'keep-deleted') return forget('unattributed (a blind window): kept deleted');
    }
    await this.recreate(ref, entry);
  }

  private async recreate(ref: Ref, entry: CanonicalEntry): Promise<void> {
    const { namespace, name } = parseObjectKey(ref.key);
    const body: Record<string, unknown> = {
      apiVersion: entry.apiVersion,
      kind: entry.kind,
      metadata: { name, ...(namespace ? { namespace } : {}), labels: entry.labels, annotations: entry.annotations },
    };
    for (const [pointer, value] of Object.entries(entryValues(entry))) setAt(body, parsePointer(pointer), value);
    try {
      const created = await this.d.kube.request<KubeObject>('POST', collectionPath(ref.group, ref.version, ref.resource, namespace || undefined), {
        body,
        query: { fieldManager: FIELD_MANAGER },
        timeoutMs: 10_000,
      });
      this.d.metrics.recreates.inc({ resource: `${ref.resource}.${ref.group}`, result: 'recreated' });
      this.d.events.record(this.involved(created), 'Warning', 'DeletedObjectRecreated', 'Recreated from the canonical copy: it was deleted outside admission by someone other than the source of truth');
      this.d.logger.info('deleted object recreated', { key: ref.key });
    } catch (err) {
      if (err instanceof KubeError && err.status === 409) return; // already back
      this.d.metrics.recreates.inc({ resource: `${ref.resource}.${ref.group}`, result: 'error' });
      throw new Error(`recreate failed: ${(err as Error).message}`);
    }
  }
}

/** One version of one object, waiting to be handled. */
interface Pending {
  ref: Ref;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubeObject;
  seenAt: number;
  /** Handled before without success this many times. */
  attempt: number;
  /** Read the object again first: it changed since this was decided. */
  stale?: boolean;
}

interface Ref {
  group: string;
  resource: string;
  version: string;
  key: string;
  rule: Rule;
  /** For an object from a list: the list's revision, as of which what it shows holds. */
  listedAt?: string;
}
