import { randomBytes } from 'node:crypto';
import type { KubeClient } from './client.js';
import { SPEC_GUARD } from '../names.js';

export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

interface Series {
  name: string;
  namespace: string;
  count: number;
  first: string;
  /** Occurrences not yet written. */
  pending: number;
  message: string;
  lastWrite: number;
  timer?: NodeJS.Timeout;
}

/**
 * Kubernetes Events on guarded objects, aggregated like the apiserver's own event
 * series: one Event per object and reason, whose count and lastTimestamp grow; written
 * at most once per `minIntervalMs` per series, later occurrences folded into the next
 * write. Failures are reported, never thrown: events are best effort.
 */
export class EventRecorder {
  private readonly series = new Map<string, Series>();

  constructor(
    private readonly kube: KubeClient,
    private readonly instance: string,
    private readonly onError: (err: Error) => void,
    private readonly minIntervalMs = 5000,
  ) {}

  record(object: InvolvedObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const namespace = object.namespace || 'default';
    const id = `${object.uid ?? object.name}/${reason}`;
    let s = this.series.get(id);
    if (!s) {
      s = {
        name: `${object.name}.${randomBytes(8).toString('hex')}`,
        namespace,
        count: 0,
        first: new Date().toISOString(),
        pending: 0,
        message,
        lastWrite: 0,
      };
      this.series.set(id, s);
    }
    s.pending++;
    s.message = message;
    if (s.timer) return;
    const wait = Math.max(0, s.lastWrite + this.minIntervalMs - Date.now());
    const series = s;
    series.timer = setTimeout(() => {
      series.timer = undefined;
      void this.flush(series, object, type, reason);
    }, wait);
    series.timer.unref();
  }

  private async flush(s: Series, object: InvolvedObject, type: string, reason: string): Promise<void> {
    const creating = s.count === 0;
    s.count += s.pending;
    s.pending = 0;
    s.lastWrite = Date.now();
    const now = new Date().toISOString();
    const path = `/api/v1/namespaces/${s.namespace}/events`;
    try {
      if (creating) {
        await this.kube.request('POST', path, {
          body: {
            apiVersion: 'v1',
            kind: 'Event',
            metadata: { name: s.name, namespace: s.namespace },
            involvedObject: object,
            type,
            reason,
            message: s.message,
            count: s.count,
            firstTimestamp: s.first,
            lastTimestamp: now,
            source: { component: SPEC_GUARD },
            reportingComponent: SPEC_GUARD,
            reportingInstance: this.instance,
          },
        });
      } else {
        await this.kube.request('PATCH', `${path}/${s.name}`, {
          contentType: 'application/merge-patch+json',
          body: { count: s.count, lastTimestamp: now, message: s.message },
        });
      }
    } catch (err) {
      this.onError(err as Error);
    }
  }
}
