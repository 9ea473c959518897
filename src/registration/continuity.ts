import { coalesce, Resources, type KubeClient } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import { laterRevision, layerPeriods, succeeding, verifiedUpTo, type ContinuityRecord, type LayerRecord, type Layers, type LayerState } from '../guard/index.js';
import type { Policy } from '../guard/index.js';
import type { AdmissionObjects } from './registrar.js';
import { enforcesAsRendered } from './enforced.js';
import { renderAdmissionObjects } from './render-all.js';
import { policyHolds } from './render-webhooks.js';
import { ADMISSION_COLLECTIONS, ADMISSION_OBJECT_NAME } from './shared.js';

const collections: Record<string, string> = ADMISSION_COLLECTIONS;

/** The admission objects each layer consists of. */
export interface LayerKinds {
  guard: string[];
  stamp: string[];
  tombstone: string[];
}

/**
 * The fail-closed guard layer is the admission policy when it holds the line for every rule,
 * else the validating webhooks (then failing closed); the validating configuration also
 * carries the tombstone webhook, the mutating one the stamp webhook.
 */
export function layerKinds(policy: Policy): LayerKinds {
  return {
    guard: policyHolds(policy) ? ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'] : ['ValidatingWebhookConfiguration'],
    stamp: ['MutatingWebhookConfiguration'],
    tombstone: ['ValidatingWebhookConfiguration'],
  };
}

/**
 * How long after the apiserver stores an admission object it is surely enforced: it loads
 * policies and webhook configurations from a watch (about a second, measured).
 */
export const IN_FORCE_MS = 2500;

/** How often, at most, the revision a period is verified up to is stored while nothing else changed. */
const SAVE_VERIFIED_MS = 10_000;
/** How long a stop waits for its last verification and save: a stop during an outage must not hang. */
const STOP_VERIFY_MS = 5000;

/** Which version of each admission object the record holds (not how far each is verified). */
const versions = (record: ContinuityRecord) => JSON.stringify(Object.values(record).map((r) => [r.uid, r.resourceVersion]));

interface Live {
  metadata: { uid?: string; resourceVersion?: string };
  [key: string]: unknown;
}

export interface ContinuityOptions {
  kube: KubeClient;
  policy: Policy;
  /** spec-guard's namespace (excluded from admission, like kube-system). */
  namespace: string;
  /** Since when (revision, apiserver time) this replica serves admission: the stamp layer needs it. */
  serving: () => { since: string; sinceTime: number } | undefined;
  /** Persists the record (the leader's store); followers keep it in memory. */
  save: (record: ContinuityRecord) => Promise<void>;
  logger: Logger;
  metrics: Metrics;
  /** A layer came into force (again): objects in sync now may have their known revision raised. */
  onEstablished: () => void;
}

/** The current etcd revision and the apiserver's clock, from a one-item list. */
export async function currentRevision(kube: KubeClient): Promise<{ since: string; sinceTime: number }> {
  let date = '';
  const list = await new Resources(kube, collections.ValidatingWebhookConfiguration!).listAt({ limit: '1' }, { onHeaders: (h) => (date = String(h.date ?? '')) });
  const sinceTime = Date.parse(date);
  return { since: list.revision, sinceTime: Number.isNaN(sinceTime) ? Date.now() : sinceTime };
}

/**
 * Knows whether spec-guard's admission layers have stayed in force, without a gap, and
 * since which revision: the evidence of attribution by continuity. A layer object counts
 * once it is as spec-guard renders it and has been so for IN_FORCE_MS; from then on the
 * same uid and resourceVersion mean the same object, untouched (any write changes the
 * resourceVersion, a delete and re-create the uid). The record is stored, so a period
 * survives restarts and outages of every replica. Every verification reads the apiserver
 * afresh, so it covers whatever the caller observed before asking.
 */
export class ContinuityMonitor {
  private record: ContinuityRecord;
  /** Versions seen as rendered but not in force long enough yet: kind → when first seen. */
  private readonly pending = new Map<string, { uid: string; resourceVersion: string; seenAt: number }>();
  private readonly broken = new Set<string>();
  /** Kinds found registered without this replica's identity among the trusted (reported once each). */
  private readonly untrustedSelf = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  readonly verify: () => Promise<Layers>;
  /** The admission objects as spec-guard renders them (where the webhooks point does not matter: GitOps installs differ). */
  private readonly desired: AdmissionObjects;
  private readonly layers: LayerKinds;
  /** The result of the last verification that completed, if any. */
  private last: Layers | undefined;
  /** The latest revision read by a list that has completed: a GET issued after it that finds a version unchanged verifies it up to there. */
  private asOf: string | undefined;
  /** The record as last handed to `save` (records are replaced, never changed in place). */
  private saved: ContinuityRecord | undefined;
  private savedAt = 0;
  /** Set by a stop: the last verification reads the revision before its GETs, so that it covers every write made until then. */
  private stopping = false;

  constructor(
    private readonly o: ContinuityOptions,
    stored: ContinuityRecord | undefined,
  ) {
    this.record = { ...stored };
    this.desired = renderAdmissionObjects(o.policy, { endpoint: { url: 'https://spec-guard.invalid' }, caBundle: '', excludedNamespaces: ['kube-system', o.namespace] });
    this.layers = layerKinds(o.policy);
    this.verify = coalesce(() => this.check());
  }

  /** Starts from the stored record and keeps the layers' state current (metrics, and periods established early). */
  start(everyMs = 2000): void {
    const tick = () => void this.verify().catch((err: Error) => this.o.logger.warn('verifying the admission layers failed', { error: err.message }));
    tick();
    this.timer = setInterval(tick, everyMs);
    this.timer.unref();
  }

  /**
   * The leader verifies once more and stores the result: every write made before the stop is
   * then within a verified period, which a change made before a blind window that follows is
   * attributed by (a trusted write admitted unstamped and not yet learned is not reverted).
   */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    if (!this.leading) return;
    this.stopping = true;
    const last = async () => {
      await this.verify().catch((err: Error) => this.o.logger.warn('the last verification of the admission layers failed', { error: err.message }));
      if (this.leading && this.record !== this.saved) await this.persist();
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_VERIFY_MS)));
    await Promise.race([last(), timeout]).finally(() => clearTimeout(timer));
  }

  private async persist(): Promise<void> {
    const record = this.record;
    this.savedAt = Date.now();
    await this.o.save(record);
    this.saved = record;
  }

  /**
   * Whether the guard layer is known to be out of force, from the last verification: then no
   * fresh one can attribute a change to a trusted writer (a period that begins later starts
   * after every revision known canonical so far), and a revert need not wait for one.
   */
  guardKnownBroken(): boolean {
    return this.last !== undefined && !this.last.guard.intact;
  }

  /** The layers as last verified (for labelling, not for trust). */
  lastVerified(): Layers | undefined {
    return this.last;
  }

  /** Told by the lifecycle: the leader alone stores the record. */
  private leading = false;

  /** This replica leads (a new leader stores what it has verified) or follows. */
  async setLeading(leading: boolean): Promise<void> {
    this.leading = leading;
    if (leading) await this.persist();
  }

  private read(kind: string): Promise<Live | undefined> {
    return new Resources<Live>(this.o.kube, collections[kind]!).get(ADMISSION_OBJECT_NAME, { timeoutMs: 5000 });
  }

  /**
   * An object registered by another install (GitOps) that does not trust this replica's own
   * identity refuses its reverts and never counts as in force: said loudly, once per object.
   */
  private reportSelfTrust(kind: string, live: Live | undefined): void {
    const self = this.o.policy.selfUser;
    const untrusted = Boolean(self && live && kind !== 'ValidatingAdmissionPolicyBinding' && !JSON.stringify(live).includes(`'${self}'`));
    this.o.metrics.selfUntrusted.set({ kind }, untrusted ? 1 : 0);
    if (untrusted && !this.untrustedSelf.has(kind)) {
      this.o.logger.error('the registered admission object does not trust this replica: its reverts are refused and the layer never counts as in force; render it with `spec-guard manifests --self-user` set to this identity', { kind, selfUser: self });
    }
    if (untrusted) this.untrustedSelf.add(kind);
    else this.untrustedSelf.delete(kind);
  }

  /** The state of one object: its record when it is the recorded, unchanged version. */
  private async checkKind(kind: string, now: number, revision: () => Promise<{ since: string; sinceTime: number }>, asOf: string | undefined): Promise<LayerRecord | undefined> {
    const live = await this.read(kind);
    const desired = this.desired[kind as keyof AdmissionObjects];
    const uid = live?.metadata.uid ?? '';
    const resourceVersion = live?.metadata.resourceVersion ?? '';
    const recorded = this.record[kind];
    if (live && recorded && recorded.uid === uid && recorded.resourceVersion === resourceVersion) {
      this.broken.delete(kind);
      const verified = verifiedUpTo(recorded, asOf);
      if (verified !== recorded) this.record = { ...this.record, [kind]: verified };
      return verified;
    }
    if (recorded && !this.broken.has(kind)) {
      this.broken.add(kind);
      this.o.metrics.blindWindows.inc({ kind });
      this.o.logger.warn('admission layer object missing or changed: a blind window begins', { kind, name: ADMISSION_OBJECT_NAME });
    }
    this.reportSelfTrust(kind, live);
    if (!live || !desired || !enforcesAsRendered(live, desired)) {
      this.pending.delete(kind);
      return undefined;
    }
    const seen = this.pending.get(kind);
    if (!seen || seen.uid !== uid || seen.resourceVersion !== resourceVersion) {
      this.pending.set(kind, { uid, resourceVersion, seenAt: now });
      return undefined;
    }
    if (now - seen.seenAt < IN_FORCE_MS) return undefined;
    this.pending.delete(kind);
    const next = succeeding({ uid, resourceVersion, ...(await revision()) }, recorded);
    this.record = { ...this.record, [kind]: next };
    this.broken.delete(kind);
    this.o.logger.info('admission layer object in force: a continuous period begins', { kind, since: next.since });
    return next;
  }

  private async check(): Promise<Layers> {
    const now = Date.now();
    const kinds = [...new Set([...this.layers.guard, ...this.layers.stamp, ...this.layers.tombstone])];
    // Read beside the GETs, for a period that begins now and as what the next check's GETs
    // verify up to; a stop's last check waits for it, to verify up to the stop.
    const current = currentRevision(this.o.kube);
    const noted = current.then(({ since }) => void (this.asOf = this.asOf === undefined ? since : laterRevision(this.asOf, since)));
    noted.catch(() => undefined); // the check that needs it awaits `current` itself
    if (this.stopping) await noted;
    const asOf = this.asOf;
    const before = this.record;
    const versionsBefore = versions(this.record);
    const states = new Map<string, LayerRecord | undefined>();
    for (const kind of kinds) states.set(kind, await this.checkKind(kind, now, () => current, asOf));
    const layer = (names: string[], serving?: { since: string; sinceTime: number }): LayerState => {
      const records = names.map((k) => states.get(k));
      if (names.length === 0 || records.some((r) => !r)) return { intact: false };
      const all = [...(records as LayerRecord[]), ...(serving ? [serving] : [])];
      return { intact: true, since: all.map((r) => r.since).reduce(laterRevision), sinceTime: Math.max(...all.map((r) => r.sinceTime)) };
    };
    const serving = this.o.serving();
    const layers: Layers = {
      guard: { ...layer(this.layers.guard), verified: layerPeriods(this.layers.guard.map((k) => this.record[k])) },
      stamp: serving ? layer(this.layers.stamp, serving) : { intact: false },
      tombstone: layer(this.layers.tombstone),
    };
    // Known before it is shown (and before the record is stored, which may take a while):
    // whoever reads the metric as "in force" finds the watcher deciding with it too.
    this.last = layers;
    for (const name of ['guard', 'stamp', 'tombstone'] as const) this.o.metrics.layerIntact.set({ layer: name }, layers[name].intact ? 1 : 0);
    // A new version recorded began a period; a verified revision advanced alone is stored at times.
    const established = versions(this.record) !== versionsBefore;
    if (this.leading && this.record !== before && (established || now - this.savedAt >= SAVE_VERIFIED_MS)) await this.persist();
    if (established) this.o.onEstablished();
    return layers;
  }
}
