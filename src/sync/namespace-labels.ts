import { KubeError, Reflector, type KubeClient, type KubeObject } from '../kube/index.js';
import type { Logger } from '../log/index.js';

type Labels = Record<string, string>;

/**
 * The labels of every namespace, kept by a watch: rules that select namespaces by label
 * (autonomous agents' namespaces on the principal) read them in admission and in the
 * watcher. Only the labels are kept: a principal's namespaces are few (hundreds).
 */
export class NamespaceLabelCache {
  private readonly labels = new Map<string, Labels>();
  private readonly reflector: Reflector<KubeObject>;
  private readonly listeners: Array<(namespace: string, before: Labels | undefined, after: Labels | undefined) => void> = [];
  private listing = new Set<string>();

  constructor(
    private readonly kube: KubeClient,
    private readonly logger: Logger,
  ) {
    this.reflector = new Reflector<KubeObject>(kube, { path: '/api/v1/namespaces' }, {
      onListPage: (items, last) => {
        for (const item of items) {
          this.listing.add(item.metadata!.name!);
          this.set(item.metadata!.name!, item.metadata?.labels ?? {});
        }
        if (!last) return;
        for (const name of [...this.labels.keys()]) if (!this.listing.has(name)) this.set(name, undefined);
        this.listing = new Set();
      },
      onEvent: (type, object) => this.set(object.metadata!.name!, type === 'DELETED' ? undefined : (object.metadata?.labels ?? {})),
      onRestart: (reason) => logger.warn('namespace watch restarted', { reason }),
    });
  }

  start(): Promise<void> {
    return this.reflector.start();
  }

  stop(): void {
    this.reflector.stop();
  }

  /** The labels of a namespace; undefined when it is not known (yet). */
  readonly get = (namespace: string): Labels | undefined => this.labels.get(namespace);

  /**
   * Makes sure a namespace the watch has not shown yet (created a moment ago) is known:
   * reads it. A namespace that cannot be read stays unknown, which selects it.
   */
  async ensure(namespace: string): Promise<void> {
    if (this.labels.has(namespace)) return;
    try {
      const ns = await this.kube.request<KubeObject>('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}`, { timeoutMs: 2_000 });
      if (!this.labels.has(namespace)) this.set(namespace, ns.metadata?.labels ?? {});
    } catch (err) {
      if (!(err instanceof KubeError && err.status === 404)) this.logger.warn('reading a namespace failed; treating it as selected', { namespace, error: (err as Error).message });
    }
  }

  /** Calls `listener` whenever a namespace's labels change (appears: before undefined; deleted: after undefined). */
  onChange(listener: (namespace: string, before: Labels | undefined, after: Labels | undefined) => void): void {
    this.listeners.push(listener);
  }

  private set(namespace: string, labels: Labels | undefined): void {
    const before = this.labels.get(namespace);
    if (labels) this.labels.set(namespace, labels);
    else this.labels.delete(namespace);
    if (JSON.stringify(before) === JSON.stringify(labels)) return;
    for (const listener of this.listeners) listener(namespace, before, labels);
  }
}
