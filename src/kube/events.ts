import { randomBytes } from 'node:crypto';
import { CALLS_IN_FLIGHT, type KubeClient } from './client.js';
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
/** Series remembered at once (the least recently recorded are forgotten first: a later occurrence starts a new Event). */
const MAX_SERIES = 10_000;
/** Event writes at once: a burst of reverts is not slowed by its own Events, which wait. */
const MAX_IN_FLIGHT = CALLS_IN_FLIGHT.events;

export class EventRecorder {
  private readonly series = new Map<string, Series>();
  private inFlight = 0;
  /** Series due to be written, waiting for a write slot (at most one entry per series). */
  private readonly due: Array<() => Promise<void>> = [];
  /** Event names: a random prefix per recorder and a counter (random bytes per Event cost more than the rest of recording it). */
  private readonly namePrefix = randomBytes(4).toString('hex');
  private named = 0;

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
        name: `${object.name}.${this.nextSuffix()}`,
        namespace,
        count: 0,
        first: new Date().toISOString(),
        pending: 0,
        message,
        lastWrite: 0,
      };
    } else {
      this.series.delete(id); // most recently recorded last
    }
    this.series.set(id, s);
    this.forgetOldest();
    s.pending++;
    s.message = message;
    if (s.timer) return;
    const wait = Math.max(0, s.lastWrite + this.minIntervalMs - Date.now());
    const series = s;
    series.timer = setTimeout(() => {
      this.due.push(() => this.flush(series, object, type, reason));
      this.pump();
    }, wait);
    series.timer.unref();
  }

  private nextSuffix(): string {
    return `${this.namePrefix}${(this.named++).toString(16).padStart(8, '0')}`;
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.due.length > 0) {
      this.inFlight++;
      void this.due.shift()!().finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private forgetOldest(): void {
    for (const [id, s] of this.series) {
      if (this.series.size <= MAX_SERIES) return;
      if (!s.timer) this.series.delete(id);
    }
  }

  /** Series remembered now (bounded). */
  get size(): number {
    return this.series.size;
  }

  private async flush(s: Series, object: InvolvedObject, type: string, reason: string): Promise<void> {
    s.timer = undefined;
    const creating = s.count === 0;
    s.count += s.pending;
    s.pending = 0;
    s.lastWrite = Date.now();
    const now = new Date().toISOString();
    const path = `/api/v1/namespaces/${s.namespace}/events`;
    try {
      if (creating) {
        await this.kube.request('POST', path, {
          discardResponse: true,
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
          discardResponse: true,
          contentType: 'application/merge-patch+json',
          body: { count: s.count, lastTimestamp: now, message: s.message },
        });
      }
    } catch (err) {
      this.onError(err as Error);
    }
  }
}
