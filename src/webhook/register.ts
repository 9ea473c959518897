import { isNotFound, Reflector, type KubeClient } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
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

/**
 * Keeps spec-guard's two webhook configurations as rendered: creates them, and restores
 * them when deleted or edited (caBundle included), from a watch on exactly those two
 * objects. Touches no other configuration.
 */
export class WebhookRegistrar {
  private reflectors: Reflector<StoredConfiguration>[] = [];
  private pending = new Map<ConfigKind, Promise<void>>();
  private again = new Set<ConfigKind>();

  constructor(
    private readonly kube: KubeClient,
    private desired: WebhookConfigurations,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
  ) {}

  private desiredOf(kind: ConfigKind): Record<string, unknown> {
    return kind === 'MutatingWebhookConfiguration' ? this.desired.mutating : this.desired.validating;
  }

  /** Brings one configuration to the desired state; repairs are logged and counted. */
  async reconcile(kind: ConfigKind): Promise<void> {
    const path = `${collections[kind]}/${WEBHOOK_CONFIGURATION_NAME}`;
    const desired = this.desiredOf(kind);
    let current: StoredConfiguration | undefined;
    try {
      current = await this.kube.request<StoredConfiguration>('GET', path);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!current) {
      await this.kube.request('POST', collections[kind], { body: desired });
      this.metrics.webhookRepairs.inc({ kind });
      this.logger.info('webhook configuration created', { kind, name: WEBHOOK_CONFIGURATION_NAME });
      return;
    }
    if (covers(current, { webhooks: desired.webhooks, metadata: { labels: (desired.metadata as { labels: unknown }).labels } })) return;
    const body = { ...desired, metadata: { ...(desired.metadata as object), resourceVersion: current.metadata.resourceVersion } };
    await this.kube.request('PUT', path, { body });
    this.metrics.webhookRepairs.inc({ kind });
    this.logger.info('webhook configuration restored', { kind, name: WEBHOOK_CONFIGURATION_NAME });
  }

  /** Serializes reconciles per kind; a change that arrives during one triggers another. */
  private schedule(kind: ConfigKind): void {
    if (this.pending.has(kind)) {
      this.again.add(kind);
      return;
    }
    const run = async (): Promise<void> => {
      for (let attempt = 0; ; attempt++) {
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
    this.pending.set(kind, run().finally(() => this.pending.delete(kind)));
  }

  /** New desired state (e.g. a new caBundle); applied at once. */
  update(desired: WebhookConfigurations): Promise<void> {
    this.desired = desired;
    return this.applyNow();
  }

  async applyNow(): Promise<void> {
    for (const kind of Object.keys(collections) as ConfigKind[]) await this.reconcile(kind);
  }

  async start(): Promise<void> {
    await this.applyNow();
    for (const kind of Object.keys(collections) as ConfigKind[]) {
      const reflector = new Reflector<StoredConfiguration>(
        this.kube,
        { path: collections[kind], fieldSelector: `metadata.name=${WEBHOOK_CONFIGURATION_NAME}`, silenceMs: 30_000 },
        {
          onListPage: () => this.schedule(kind),
          onEvent: () => this.schedule(kind),
          onRestart: (reason) => this.logger.debug('webhook configuration watch restarted', { kind, reason }),
        },
      );
      this.reflectors.push(reflector);
      await reflector.start();
    }
  }

  stop(): void {
    for (const r of this.reflectors) r.stop();
  }
}
