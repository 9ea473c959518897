import { Informer, isConflict, Resources, WorkQueue, type KubeClient } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import { bundleCarries, type CaBundleTarget } from '../certs/index.js';
import { ADMISSION_COLLECTIONS, ADMISSION_OBJECT_NAME, type AdmissionKind } from './shared.js';
import { enforcesAsRendered } from './enforced.js';

const collections = ADMISSION_COLLECTIONS;
type ConfigKind = AdmissionKind;
const webhookKinds: ConfigKind[] = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'];

/** The admission objects spec-guard registers, by kind (the policy and binding may be absent). */
export type AdmissionObjects = Partial<Record<ConfigKind, Record<string, unknown>>>;

interface StoredConfiguration {
  metadata: { resourceVersion?: string; [key: string]: unknown };
  webhooks?: unknown[];
  [key: string]: unknown;
}

/** True when every field `desired` sets has the same value in `actual` (the apiserver adds defaults). */
export function covers(actual: unknown, desired: unknown): boolean {
  if (Array.isArray(desired)) {
    return Array.isArray(actual) && actual.length === desired.length && desired.every((d, i) => covers(actual[i], d));
  }
  if (typeof desired === 'object' && desired !== null) {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return false;
    return Object.entries(desired).every(([k, v]) => covers((actual as Record<string, unknown>)[k], v));
  }
  return actual === desired;
}

interface StoredWebhook {
  name?: string;
  clientConfig?: { caBundle?: string };
}

/** True when every webhook of a configuration trusts `caPem` (an absent configuration breaks nothing). */
function configurationCarries(current: StoredConfiguration | undefined, caPem: string): boolean {
  const webhooks = (current?.webhooks ?? []) as StoredWebhook[];
  return webhooks.every((w) => bundleCarries(Buffer.from(w.clientConfig?.caBundle ?? '', 'base64').toString('utf8'), caPem));
}

/** For a replica that does not register (GitOps installs): nothing to publish, the configurations read as they are. */
export function unregisteredTarget(kube: KubeClient): CaBundleTarget {
  return { publish: async () => undefined, carries: (caPem) => configurationsCarry(kube, caPem) };
}

/** True when every webhook of both configurations, as the apiserver has them now, trusts `caPem`. */
export async function configurationsCarry(kube: KubeClient, caPem: string): Promise<boolean> {
  for (const kind of webhookKinds) {
    const current = await new Resources<StoredConfiguration>(kube, collections[kind]).get(ADMISSION_OBJECT_NAME);
    if (!configurationCarries(current, caPem)) return false;
  }
  return true;
}

/** The desired webhooks, with the caBundle found in `current` where spec-guard leaves it to a CA injector. */
function keepInjectedBundles(desired: Record<string, unknown>, current: StoredConfiguration): Record<string, unknown> {
  if (!desired.webhooks) return desired;
  const found = new Map(((current.webhooks ?? []) as StoredWebhook[]).map((w) => [w.name, w.clientConfig?.caBundle]));
  const webhooks = (desired.webhooks as (StoredWebhook & Record<string, unknown>)[]).map((w) =>
    w.clientConfig?.caBundle || !found.get(w.name) ? w : { ...w, clientConfig: { ...w.clientConfig, caBundle: found.get(w.name) } },
  );
  return { ...desired, webhooks };
}

/**
 * The ClusterRole that grants spec-guard its rights, which every install route (Helm,
 * kustomize, `spec-guard manifests --rbac`) creates and every uninstall deletes: the owner
 * of the admission objects spec-guard registers, so that the garbage collector removes them
 * with it. Without an owner, an uninstall would leave a policy nobody operates and a
 * tombstone webhook that fails closed, refusing every delete of the agent.
 */
const ownerRoles = (kube: KubeClient) => Resources.of<{ metadata: { name?: string; uid: string } }>(kube, 'rbac.authorization.k8s.io', 'v1', 'clusterroles');

interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

const ownedBy = (current: StoredConfiguration, owner: OwnerReference): boolean =>
  ((current.metadata.ownerReferences ?? []) as OwnerReference[]).some((r) => r.kind === owner.kind && r.name === owner.name && r.uid === owner.uid);

/** What `desired` sets besides its identity: the part a repair must bring back. */
function owned(desired: Record<string, unknown>): Record<string, unknown> {
  const { apiVersion: _apiVersion, kind: _kind, metadata, ...rest } = desired;
  return { ...rest, metadata: { labels: (metadata as { labels?: unknown }).labels } };
}

/**
 * Keeps spec-guard's admission objects as rendered (both webhook configurations, and the
 * admission policy with its binding): creates them, and restores them when deleted or
 * edited (caBundle included), from a watch on exactly those objects. Touches no other
 * object. Only the leader is active, so that replicas with different views (a rolling
 * update, a CA rotation seen a moment apart) never take turns overwriting each other;
 * every replica keeps its desired state current. A repair means the layer was missing or
 * altered for a while: a blind window, logged as such and counted.
 */
export class WebhookRegistrar implements CaBundleTarget {
  /** While active: one informer per kind, on exactly spec-guard's object; reconcile reads from it. */
  private informers = new Map<ConfigKind, Informer<StoredConfiguration>>();
  /** One key per kind, reconciled one run at a time with the one retry policy. */
  private readonly queue: WorkQueue;
  private desired: AdmissionObjects;
  private active = false;
  private activation: Promise<void> = Promise.resolve();
  private readonly kinds: ConfigKind[];
  /** Kinds that were in place once: missing again later means someone deleted them. */
  private readonly placed = new Set<ConfigKind>();
  /** The owner as last read; read again before every write (it may have been replaced). */
  private owner: OwnerReference | undefined;

  constructor(
    private readonly kube: KubeClient,
    private readonly render: (caBundle: string) => AdmissionObjects,
    private caBundle: string,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
  ) {
    this.desired = render(caBundle);
    this.kinds = (Object.keys(collections) as ConfigKind[]).filter((kind) => this.desired[kind]);
    this.queue = new WorkQueue(
      async (kind) => {
        if (this.active) await this.reconcile(kind as ConfigKind);
      },
      {
        metrics: metrics.queue('registration'),
        // A conflict is a write that raced the informer's view: the retry reads the newer one.
        onError: (kind, err, retryInMs) => this.logger[isConflict(err) ? 'debug' : 'warn']('admission object reconcile failed; retrying', { kind, error: (err as Error).message, retryInMs }),
      },
    );
  }

  /** Brings one object to the desired state, as its informer shows it; repairs are logged and counted. */
  private async reconcile(kind: ConfigKind): Promise<void> {
    const informer = this.informers.get(kind);
    // Not listed yet: the activation reconciles every kind once its informers have listed.
    if (!informer?.hasSynced) return;
    const current = informer.get(ADMISSION_OBJECT_NAME);
    const wanted = this.desired[kind]!;
    if (!current) {
      const owner = await this.readOwner();
      await new Resources(this.kube, collections[kind]).create({ ...wanted, metadata: { ...(wanted.metadata as object), ownerReferences: [owner] } });
      this.metrics.webhookRepairs.inc({ kind });
      if (this.placed.has(kind)) this.logger.warn('admission object restored: it was deleted (a blind window)', { kind, name: ADMISSION_OBJECT_NAME });
      else this.logger.info('admission object created', { kind, name: ADMISSION_OBJECT_NAME });
      this.placed.add(kind);
      return;
    }
    this.placed.add(kind);
    const desired = keepInjectedBundles(wanted, current);
    const enforced = covers(current, owned(desired)) && enforcesAsRendered(current, desired);
    if (enforced && this.owner && ownedBy(current, this.owner)) return;
    const owner = await this.readOwner();
    if (enforced && ownedBy(current, owner)) return;
    // The owner is set in place (not added to): another owner would outlive an uninstall.
    const body = { ...desired, metadata: { ...current.metadata, ...(desired.metadata as object), ownerReferences: [owner], resourceVersion: current.metadata.resourceVersion } };
    await new Resources<StoredConfiguration>(this.kube, collections[kind]).replace(body as StoredConfiguration);
    if (!enforced) {
      this.metrics.webhookRepairs.inc({ kind });
      this.logger.warn('admission object restored: it was changed by someone else (a blind window)', { kind, name: ADMISSION_OBJECT_NAME });
    } else this.logger.info('admission object given its owner, for a clean uninstall', { kind, name: ADMISSION_OBJECT_NAME, owner: `ClusterRole/${owner.name}` });
  }

  /** The owning ClusterRole as the apiserver has it now; missing, nothing is registered (an error, retried). */
  private async readOwner(): Promise<OwnerReference> {
    const role = await ownerRoles(this.kube).get(ADMISSION_OBJECT_NAME);
    if (!role) {
      throw new Error(
        `the ClusterRole ${ADMISSION_OBJECT_NAME} (spec-guard's rights, the owner of its admission objects) does not exist: ` +
          'spec-guard registers nothing an uninstall would leave behind; install its RBAC (spec-guard manifests --rbac, the chart or an overlay)',
      );
    }
    this.owner = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: ADMISSION_OBJECT_NAME, uid: role.metadata.uid };
    return this.owner;
  }

  /** Reconciles `kind` now, or once more after the run in progress; resolves when a run started after this call succeeds. */
  private schedule(kind: ConfigKind): Promise<void> {
    return this.queue.addAndWait(kind);
  }

  /** A new trusted CA bundle; when active, resolves once both configurations carry it. */
  async publish(caBundle: string): Promise<void> {
    if (caBundle === this.caBundle) return;
    this.caBundle = caBundle;
    this.desired = this.render(caBundle);
    if (!this.active) return;
    // A run that started after this call renders the new bundle.
    await Promise.all(webhookKinds.map((kind) => this.schedule(kind)));
  }

  /** Starts (leader) or stops reconciling; resolves when an activation has applied the configurations once. */
  setActive(active: boolean): Promise<void> {
    if (active === this.active) return this.activation;
    this.active = active;
    if (!active) {
      for (const informer of this.informers.values()) informer.stop();
      this.informers.clear();
      this.activation = Promise.resolve();
      return this.activation;
    }
    this.activation = this.activate();
    return this.activation;
  }

  private async activate(): Promise<void> {
    const informers = this.kinds.map((kind) => {
      const informer = new Informer<StoredConfiguration>(
        this.kube,
        {
          path: collections[kind],
          fieldSelector: `metadata.name=${ADMISSION_OBJECT_NAME}`,
          silenceMs: 30_000,
          onRestart: (reason) => this.logger.debug('admission object watch restarted', { kind, reason }),
        },
        () => void this.schedule(kind),
      );
      this.informers.set(kind, informer);
      return informer;
    });
    await Promise.all(informers.map((informer) => informer.start()));
    if (!this.active) return;
    await Promise.all(this.kinds.map((kind) => this.schedule(kind)));
  }

  /** True when every webhook of both configurations trusts `caPem`: read from the informers while active, else from the apiserver. */
  async carries(caPem: string): Promise<boolean> {
    if (!this.active || !webhookKinds.every((kind) => this.informers.get(kind)?.hasSynced)) return configurationsCarry(this.kube, caPem);
    return webhookKinds.every((kind) => configurationCarries(this.informers.get(kind)!.get(ADMISSION_OBJECT_NAME), caPem));
  }

  stop(): void {
    void this.setActive(false);
    void this.queue.stop();
  }
}
