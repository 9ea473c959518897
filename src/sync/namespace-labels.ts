import { Informer, Resources, type KubeClient, type KubeObject } from '../kube/index.js';
import type { Logger } from '../log/index.js';

type Labels = Record<string, string>;

/**
 * The labels of every namespace, kept by a watch: rules that select namespaces by label
 * (autonomous agents' namespaces on the principal) read them in admission and in the
 * watcher. Only the labels are kept: a principal's namespaces are few (hundreds).
 */
export class NamespaceLabelCache {
  private readonly informer: Informer<KubeObject, Labels>;
  /** Namespaces read directly (created a moment ago, not shown by the watch yet). */
  private readonly read = new Map<string, Labels>();
  private readonly listeners: Array<(namespace: string, before: Labels | undefined, after: Labels | undefined) => void> = [];

  private readonly namespaces: Resources<KubeObject & { metadata?: { name?: string } }>;

  constructor(
    kube: KubeClient,
    private readonly logger: Logger,
  ) {
    this.namespaces = Resources.of(kube, '', 'v1', 'namespaces');
    this.informer = new Informer<KubeObject, Labels>(
      kube,
      {
        path: '/api/v1/namespaces',
        project: (ns) => ns.metadata?.labels ?? {},
        onRestart: (reason) => logger.warn('namespace watch restarted', { reason }),
        // A complete list shows every namespace: one read directly that it misses is gone
        // (so the direct reads stay bounded by the namespaces that exist).
        onListed: () => {
          for (const [namespace, labels] of [...this.read]) {
            this.read.delete(namespace);
            if (!this.informer.has(namespace)) this.changed(namespace, labels, undefined);
          }
        },
      },
      ({ key, previous }) => {
        const before = previous ?? this.read.get(key);
        this.read.delete(key);
        this.changed(key, before, this.informer.get(key));
      },
    );
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): void {
    this.informer.stop();
  }

  /** The labels of a namespace; undefined when it is not known (yet). */
  readonly get = (namespace: string): Labels | undefined => this.informer.get(namespace) ?? this.read.get(namespace);

  /**
   * Makes sure a namespace the watch has not shown yet (created a moment ago) is known:
   * reads it. A namespace that cannot be read stays unknown, which selects it.
   */
  async ensure(namespace: string): Promise<void> {
    if (this.get(namespace)) return;
    try {
      const ns = await this.namespaces.get(namespace, { timeoutMs: 2_000 });
      if (!ns || this.get(namespace)) return;
      const labels = ns.metadata?.labels ?? {};
      this.read.set(namespace, labels);
      this.changed(namespace, undefined, labels);
    } catch (err) {
      this.logger.warn('reading a namespace failed; treating it as selected', { namespace, error: (err as Error).message });
    }
  }

  /** Calls `listener` whenever a namespace's labels change (appears: before undefined; deleted: after undefined). */
  onChange(listener: (namespace: string, before: Labels | undefined, after: Labels | undefined) => void): void {
    this.listeners.push(listener);
  }

  private changed(namespace: string, before: Labels | undefined, after: Labels | undefined): void {
    if (JSON.stringify(before) === JSON.stringify(after)) return;
    for (const listener of this.listeners) listener(namespace, before, after);
  }
}
