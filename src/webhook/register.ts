import { isNotFound, Reflector, type KubeClient } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import { bundleCarries } from '../certs/bundle.js';
import { WEBHOOK_CONFIGURATION_NAME, type WebhookConfigurations } from './registration.js';

const collections = {
  MutatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
  ValidatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
} as const;
type ConfigKind = keyof typeof collections;

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

/** True when every webhook of both configurations trusts `caPem` (absent configurations break nothing). */
export async function configurationsCarry(kube: KubeClient, caPem: string): Promise<boolean> {
  for (const collection of Object.values(collections)) {
    let current: StoredConfiguration;
    try {
      current = await kube.request<StoredConfiguration>('GET', `${collection}/${WEBHOOK_CONFIGURATION_NAME}`);
    } catch (err) {
      if (isNotFound(err)) continue;
      throw err;
    }
    const webhooks = (current.webhooks ?? []) as StoredWebhook[];
    const carried = webhooks.every((w) => bundleCarries(Buffer.from(w.clientConfig?.caBundle ?? '', 'base64').toString('utf8'), caPem));
    if (!carried) return false;
  }
  return true;
}

/** The desired webhooks, with the caBundle found in `current` where spec-guard leaves it to a CA injector. */
function keepInjectedBundles(desired: Record<string, unknown>, current: StoredConfiguration): Record<string, unknown> {
  const found = new Map(((current.webhooks ?? []) as StoredWebhook[]).map((w) => [w.name, w.clientConfig?.caBundle]));
  const webhooks = (desired.webhooks as (StoredWebhook & Record<string, unknown>)[]).map((w) =>
    w.clientConfig?.caBundle || !found.get(w.name) ? w : { ...w, clientConfig: { ...w.clientConfig, caBundle: found.get(w.name) } },
  );
  return { ...desired, webhooks };
}

/**
 * Keeps spec-guard's two webhook configurations as rendered: creates them, and restores
 * them when deleted or edited (caBundle included), from a watch on exactly those two
 * objects. Touches no other configuration. Only the leader is active, so that replicas
 * with different views (a rolling update, a CA rotation seen a moment apart) never take
 * turns overwriting each other; every replica keeps its desired state current.
 */
export class WebhookRegistrar {
  private reflectors: Reflector<StoredConfiguration>[] = [];
  private pending = new Map<ConfigKind, Promise<void>>();
  private again = new Set<ConfigKind>();
  private desired: WebhookConfigurations;
  private active = false;
  private activation: Promise<void> = Promise.resolve();

  constructor(
    private readonly kube: KubeClient,
    private readonly render: (caBundle: string) => WebhookConfigurations,
    private caBundle: string,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
  ) {
    this.desired = render(caBundle);
  }

  private desiredOf(kind: ConfigKind): Record<string, unknown> {
    return kind === 'MutatingWebhookConfiguration' ? this.desired.mutating : this.desired.validating;
  }

  /** Brings one configuration to the desired state; repairs are logged and counted. */
  async reconcile(kind: ConfigKind): Promise<void> {
    const path = `${collections[kind]}/${WEBHOOK_CONFIGURATION_NAME}`;
    let current: StoredConfiguration | undefined;
    try {
      current = await this.kube.request<StoredConfiguration>('GET', path);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!current) {
      await this.kube.request('POST', collections[kind], { body: this.desiredOf(kind) });
      this.metrics.webhookRepairs.inc({ kind });
      this.logger.info('webhook configuration created', { kind, name: WEBHOOK_CONFIGURATION_NAME });
      return;
    }
    const desired = keepInjectedBundles(this.desiredOf(kind), current);
    if (covers(current, { webhooks: desired.webhooks, metadata: { labels: (desired.metadata as { labels: unknown }).labels } })) return;
    const body = { ...desired, metadata: { ...(desired.metadata as object), resourceVersion: current.metadata.resourceVersion } };
    await this.kube.request('PUT', path, { body });
    this.metrics.webhookRepairs.inc({ kind });
    this.logger.info('webhook configuration restored', { kind, name: WEBHOOK_CONFIGURATION_NAME });
  }

  /** Serializes reconciles per kind; a change that arrives during one triggers another. */
  private schedule(kind: ConfigKind): Promise<void> {
    const running = this.pending.get(kind);
    if (running) {
      this.again.add(kind);
      return running;
    }
    const run = async (): Promise<void> => {
      for (let attempt = 0; this.active; attempt++) {
        this.again.delete(kind);
        try {
          await this.reconcile(kind);
        } catch (err) {
          this.logger.warn('webhook configuration reconcile failed; retrying', { kind, error: (err as Error).message });
          await new Promise((r) => setTimeout(r, Math.min(200 * 2 ** attempt, 5000)));
          this.again.add(kind);
        }
        if (!this.again.has(kind)) return;
      }
    };
    const promise = run().finally(() => this.pending.delete(kind));
    this.pending.set(kind, promise);
    return promise;
  }

  /** A new trusted CA bundle; when active, resolves once both configurations carry it. */
  async setCaBundle(caBundle: string): Promise<void> {
    if (caBundle === this.caBundle) return;
    this.caBundle = caBundle;
    this.desired = this.render(caBundle);
    if (!this.active) return;
    const kinds = Object.keys(collections) as ConfigKind[];
    // A reconcile already running may have rendered the old bundle: run once more after it.
    await Promise.all(kinds.map((kind) => this.schedule(kind).then(() => this.schedule(kind))));
  }

  /** Starts (leader) or stops reconciling; resolves when an activation has applied the configurations once. */
  setActive(active: boolean): Promise<void> {
    if (active === this.active) return this.activation;
    this.active = active;
    if (!active) {
      for (const r of this.reflectors) r.stop();
      this.reflectors = [];
      this.activation = Promise.resolve();
      return this.activation;
    }
    this.activation = this.activate();
    return this.activation;
  }

  private async activate(): Promise<void> {
    const kinds = Object.keys(collections) as ConfigKind[];
    await Promise.all(kinds.map((kind) => this.schedule(kind)));
    for (const kind of kinds) {
      if (!this.active) return;
      const reflector = new Reflector<StoredConfiguration>(
        this.kube,
        { path: collections[kind], fieldSelector: `metadata.name=${WEBHOOK_CONFIGURATION_NAME}`, silenceMs: 30_000 },
        {
          onListPage: () => void this.schedule(kind),
          onEvent: () => void this.schedule(kind),
          onRestart: (reason) => this.logger.debug('webhook configuration watch restarted', { kind, reason }),
        },
      );
      this.reflectors.push(reflector);
      await reflector.start();
    }
  }

  stop(): void {
    void this.setActive(false);
  }
}
