import { isNotFound, KubeError, Resources, type EventRecorder, type KubeClient, type KubeObject, type Slots } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import { resourceName, RevertThrottle, type PatchOp, type RepairPlan, type Report, type Rule } from '../guard/index.js';
import type { CanonicalCache } from './cache.js';
import type { CanonicalStore } from './store/index.js';
import type { StoreWriter } from './store-writer.js';
import { SPEC_GUARD } from '../names.js';

/** Which object a plan is for. */
export interface Target {
  group: string;
  resource: string;
  version: string;
  key: string;
  rule: Rule;
}

/**
 * After executing a plan: done (`notSent`: its call was given up, this replica no longer
 * leading), or decide again on a fresh read (now, or after `afterMs`).
 */
export type Outcome = { again: false; notSent?: true } | { again: true; afterMs?: number };

export interface RepairerDeps {
  kube: KubeClient;
  cache: CanonicalCache;
  store: CanonicalStore;
  writer: StoreWriter;
  events: EventRecorder;
  metrics: Metrics;
  logger: Logger;
  /** Whether this replica leads now, as the lifecycle told the watcher. */
  leading: () => boolean;
  /** The repairs' calls to the apiserver at once (a plan is made before its call waits for one). */
  slots: Slots;
}

const DONE: Outcome = { again: false };
const NOT_SENT: Outcome = { again: false, notSent: true };
/** A call given up when its slot came: this replica no longer leads (the new leader relists and decides). */
const NOT_LEADING = Symbol('not leading');
const isRetryableConflict = (err: unknown) => err instanceof KubeError && (err.status === 409 || err.status === 422);

/**
 * Executes repair plans: the cache and store changes, the patches and creates (each with a
 * resourceVersion test: a concurrent write, trusted or not, is never clobbered), the Events,
 * the metrics and the backoff of reverts against another writer.
 */
export class Repairer {
  private readonly throttle = new RevertThrottle();
  /** Keys drifted and not yet reverted, for the drifted-objects gauge. */
  private readonly drifted = new Set<string>();
  private readonly driftedPerResource = new Map<string, number>();

  constructor(private readonly d: RepairerDeps) {}

  /**
   * `object`: the version the plan was made for (what names it, at least); `attempt`: how
   * often it was tried before; `seenAt`: when the watch showed it (ms).
   */
  async execute(target: Target, object: KubeObject, plan: RepairPlan, seenAt: number, attempt: number): Promise<Outcome> {
    const { key } = target;
    const label = resourceName(target.group, target.resource);
    if (plan.drifted !== undefined) this.setDrifted(target, plan.drifted);
    if (plan.detected && attempt === 0) this.d.metrics.driftDetected.inc({ source: 'watch', resource: label });
    if (plan.unattributed) {
      const { change, changed, action, report, byRevert } = plan.unattributed;
      this.d.metrics.unattributed.inc({ resource: label, change, action });
      if (!byRevert) {
        this.record(object, report);
        this.d.logger.warn('unattributed change in a blind window', { key, change, changed, action });
      }
    }
    switch (plan.kind) {
      case 'verify-layers':
        throw new Error('a plan made with the layers asked for them again');
      case 'none':
        if (plan.why) this.d.logger.debug(plan.why, { key });
        return DONE;
      case 'warn':
        this.record(object, plan.report);
        return DONE;
      case 'forget':
        if (plan.tombstone) this.d.cache.recordTombstone(key, plan.tombstone);
        if (plan.report) {
          this.record(object, plan.report);
          this.d.metrics.unguardable.inc({ resource: label });
        }
        this.d.cache.delete(key);
        this.d.writer.markDirty(key);
        this.setDrifted(target, false);
        if (plan.report) this.d.logger.warn(plan.why, { key });
        else this.d.logger.info(plan.why, { key, by: plan.by });
        return DONE;
      case 'keep':
        this.d.cache.set(key, plan.entry);
        if (plan.store) this.d.writer.markDirty(key);
        if (plan.endFight) this.throttle.forget(key);
        if (plan.clearTombstone) {
          this.d.cache.clearTombstone(key);
          if (this.d.leading()) await this.d.store.removeTombstone(key);
        }
        return this.patch(target, object, plan.stamp, plan.purpose);
      case 'revert':
        return this.revert(target, object, plan, seenAt, attempt);
      case 'recreate':
        return this.recreate(target, plan.body, plan.report);
    }
  }

  private async revert(target: Target, object: KubeObject, plan: Extract<RepairPlan, { kind: 'revert' }>, seenAt: number, attempt: number): Promise<Outcome> {
    const { key } = target;
    const label = resourceName(target.group, target.resource);
    const { waitMs, fightStarted } = this.throttle.decide(key, Date.now());
    // Fighting another writer: revert the version there is once the backoff is over.
    if (waitMs > 0) return { again: true, afterMs: waitMs };
    if (fightStarted) {
      this.d.metrics.revertBackoffs.inc({ resource: label });
      this.record(object, { reason: 'SpecDriftFight', message: `Another writer keeps changing ${plan.changed.join(', ')}; spec-guard keeps reverting, each time after a longer wait (up to 5 min)` });
      this.d.logger.warn('another writer keeps changing a guarded object; reverts back off', { key });
    }
    let slotAt = Date.now();
    let sentAt = slotAt;
    const outcome = await this.patch(target, object, plan.ops, 'revert', { onSlot: () => (slotAt = Date.now()), onSent: () => (sentAt = Date.now()) });
    if (outcome.again || outcome.notSent || plan.ops.length === 0) return outcome;
    const now = Date.now();
    this.d.metrics.reverts.inc({ resource: label, result: 'reverted' });
    this.d.metrics.revertLatency.observe((now - seenAt) / 1000);
    this.record(object, plan.report);
    // ms: since the watch showed the drift; of that, queuedMs: until a repair slot took it,
    // patchMs: the apiserver's answer to the revert, from the PATCH written to its connection
    // (a wait for one of the client's connections is spec-guard's own); attempt: tries before
    // this one (a conflict re-reads and decides again).
    // A change made in a blind window is reported by this line (a warning) and this Event alone.
    const level = plan.unattributed?.byRevert ? 'warn' : 'info';
    this.d.logger[level]('drift reverted', { key, changed: plan.changed, attribution: plan.attribution, ms: now - seenAt, queuedMs: slotAt - seenAt, patchMs: now - sentAt, attempt });
    return DONE;
  }

  /**
   * Patches with a resourceVersion test. On a conflict the object is decided again on a
   * fresh read; other errors go to the queue, which retries with backoff.
   */
  private async patch(target: Target, object: KubeObject, ops: PatchOp[], what: 'stamp' | 'restamp' | 'revert', timing: { onSlot?: () => void; onSent?: () => void } = {}): Promise<Outcome> {
    if (ops.length === 0) return DONE;
    const meta = object.metadata!;
    const resources = Resources.of<KubeObject>(this.d.kube, target.group, target.version, target.resource, meta.namespace);
    const body = [{ op: 'test', path: '/metadata/resourceVersion', value: meta.resourceVersion }, ...ops];
    try {
      const sent = await this.leadingCall(() => resources.jsonPatchUnread(meta.name!, body, { query: { fieldManager: SPEC_GUARD }, timeoutMs: 10_000, onSent: timing.onSent }), timing.onSlot);
      return sent === NOT_LEADING ? NOT_SENT : DONE;
    } catch (err) {
      if (isNotFound(err)) return DONE;
      if (isRetryableConflict(err)) return { again: true };
      if (what === 'revert') this.d.metrics.reverts.inc({ resource: resourceName(target.group, target.resource), result: 'error' });
      throw new Error(`${what} failed: ${(err as Error).message}`);
    }
  }

  private async recreate(target: Target, body: Record<string, unknown>, report: Report): Promise<Outcome> {
    const label = resourceName(target.group, target.resource);
    const namespace = (body.metadata as { namespace?: string }).namespace;
    try {
      const resources = Resources.of<KubeObject>(this.d.kube, target.group, target.version, target.resource, namespace);
      const created = await this.leadingCall(() => resources.create(body, { query: { fieldManager: SPEC_GUARD }, timeoutMs: 10_000 }));
      if (created === NOT_LEADING) return NOT_SENT;
      this.d.metrics.recreates.inc({ resource: label, result: 'recreated' });
      this.record(created, report);
      this.d.logger.info('deleted object recreated', { key: target.key });
      return DONE;
    } catch (err) {
      if (err instanceof KubeError && err.status === 409) return DONE; // already back
      this.d.metrics.recreates.inc({ resource: label, result: 'error' });
      throw new Error(`recreate failed: ${(err as Error).message}`);
    }
  }

  /**
   * A write once one of the repairs' slots is free, if this replica still leads then: a plan
   * is made when the watch shows a version, and the lease may be lost while its call waits.
   */
  private leadingCall<T>(send: () => Promise<T>, onSlot?: () => void): Promise<T | typeof NOT_LEADING> {
    return this.d.slots.use(async () => (this.d.leading() ? send() : NOT_LEADING), onSlot);
  }

  private record(object: KubeObject, report: Report): void {
    const involved = {
      apiVersion: object.apiVersion ?? '',
      kind: object.kind ?? '',
      name: object.metadata?.name ?? '',
      namespace: object.metadata?.namespace,
      uid: object.metadata?.uid,
    };
    this.d.events.record(involved, 'Warning', report.reason, report.message);
  }

  private setDrifted(target: Target, drifted: boolean): void {
    if (drifted === this.drifted.has(target.key)) return;
    if (drifted) this.drifted.add(target.key);
    else this.drifted.delete(target.key);
    const resource = resourceName(target.group, target.resource);
    const count = (this.driftedPerResource.get(resource) ?? 0) + (drifted ? 1 : -1);
    this.driftedPerResource.set(resource, count);
    this.d.metrics.driftedObjects.set({ resource }, count);
  }
}
