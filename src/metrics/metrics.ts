import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { QueueMetrics } from '../kube/work-queue.js';

/**
 * How often the event loop's delay is sampled (prom-client's default: every 10 ms). Each sample
 * is a timer that wakes the loop: at 10 ms an idle replica woke 100 times a second and spent
 * 9 ms of CPU a second doing so, about 20 µs per review at 500 reviews a second
 * (docs/benchmarks.md, round 22). Every 100 ms still catches each block of the loop that long.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/** Every spec-guard metric, on one registry. Labels take bounded values only. */
export class Metrics {
  readonly registry = new Registry();

  readonly admissionRequests = new Counter({
    name: 'spec_guard_admission_requests_total',
    help: 'Admission requests answered, by webhook, operation, resource and decision.',
    labelNames: ['webhook', 'operation', 'resource', 'decision'] as const,
    registers: [this.registry],
  });

  readonly admissionErrors = new Counter({
    name: 'spec_guard_admission_errors_total',
    help: 'Admission requests refused as malformed (HTTP 4xx) or failed (HTTP 5xx), by code.',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  readonly admissionLatency = new Histogram({
    name: 'spec_guard_admission_duration_seconds',
    help: 'Time to decide one admission request.',
    labelNames: ['webhook'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly driftDetected = new Counter({
    name: 'spec_guard_drift_detected_total',
    help: 'Untrusted changes of guarded paths seen, by source (admission or watch) and resource.',
    labelNames: ['source', 'resource'] as const,
    registers: [this.registry],
  });

  readonly reverts = new Counter({
    name: 'spec_guard_reverts_total',
    help: 'Reverts of drifted objects by the watcher, by resource and result.',
    labelNames: ['resource', 'result'] as const,
    registers: [this.registry],
  });

  readonly recreates = new Counter({
    name: 'spec_guard_recreates_total',
    help: 'Guarded objects recreated after a delete that bypassed admission, by resource and result.',
    labelNames: ['resource', 'result'] as const,
    registers: [this.registry],
  });

  readonly unguardable = new Counter({
    name: 'spec_guard_unguardable_total',
    help: 'Trusted writes that spec-guard admitted but cannot guard (a value nested deeper than it compares), by resource.',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });

  readonly driftedObjects = new Gauge({
    name: 'spec_guard_drifted_objects',
    help: 'Objects whose guarded paths differ from the canonical value right now and are to be reverted, by resource.',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });

  readonly revertBackoffs = new Counter({
    name: 'spec_guard_revert_backoffs_total',
    help: 'Objects on which another writer kept undoing the reverts, so that spec-guard backed off (once per fight), by resource.',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });

  readonly storeUsage = new Gauge({
    name: 'spec_guard_store_usage_ratio',
    help: 'How full the fullest Secret of the secret store is, against the 1 MiB limit (0 for the file store). At 1 the leader can no longer save.',
    registers: [this.registry],
  });

  readonly storeEntries = new Gauge({
    name: 'spec_guard_store_entries',
    help: 'Canonical entries in the store as this replica last loaded or wrote it. Below spec_guard_canonical_objects on the leader: changes not saved yet (a first start writes every object it learns).',
    registers: [this.registry],
  });

  readonly tombstones = new Gauge({
    name: 'spec_guard_tombstones',
    help: 'Tombstones of trusted deletes waiting for the watch to confirm them (at most 2000 and 512 KiB: past that, the oldest that no finalizer holds give way; no delete is refused for room).',
    registers: [this.registry],
  });

  readonly revertLatency = new Histogram({
    name: 'spec_guard_revert_duration_seconds',
    help: 'Time from seeing drift to the revert being stored.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  /** Where the canonical-objects gauge reads its counts at a scrape (the canonical cache). */
  private canonicalCounts: () => ReadonlyMap<string, number> = () => new Map();

  readonly canonicalObjects: Gauge<'resource'> = new Gauge({
    name: 'spec_guard_canonical_objects',
    help: 'Objects with a known canonical value, by resource, as the canonical cache holds them at the scrape.',
    labelNames: ['resource'] as const,
    registers: [this.registry],
    collect: () => {
      for (const [resource, count] of this.canonicalCounts()) this.canonicalObjects.set({ resource }, count);
    },
  });

  /** The canonical-objects gauge reads `counts` at every scrape. */
  countCanonicalObjects(counts: () => ReadonlyMap<string, number>): void {
    this.canonicalCounts = counts;
  }

  readonly storeErrors = new Counter({
    name: 'spec_guard_store_errors_total',
    help: 'Failed reads or writes of the canonical store, by operation.',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  readonly watchRestarts = new Counter({
    name: 'spec_guard_watch_restarts_total',
    help: 'Watches restarted after an error, a 410 Gone or silence, by resource.',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });

  readonly leader = new Gauge({
    name: 'spec_guard_leader',
    help: '1 while this replica holds the leader lease.',
    registers: [this.registry],
  });

  readonly certificateExpiry = new Gauge({
    name: 'spec_guard_certificate_expiry_timestamp_seconds',
    help: 'When the certificate in use expires, by kind (serving or ca).',
    labelNames: ['certificate'] as const,
    registers: [this.registry],
  });

  readonly certificateRotations = new Counter({
    name: 'spec_guard_certificate_rotations_total',
    help: 'Certificates replaced by spec-guard (renewed, rotated on request or repaired), by kind (serving or ca).',
    labelNames: ['certificate'] as const,
    registers: [this.registry],
  });

  readonly webhookRepairs = new Counter({
    name: 'spec_guard_webhook_configuration_repairs_total',
    help: 'Webhook configurations created or restored by spec-guard, by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly workGivenUp = new Counter({
    name: 'spec_guard_work_given_up_total',
    help: 'Keys a work queue gave up on after its retry cap (the next event or resync brings them back), by queue.',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });

  readonly queueDepth = new Gauge({
    name: 'spec_guard_work_queue_depth',
    help: 'Keys waiting or being handled in a work queue, by queue.',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });

  readonly queueRetries = new Counter({
    name: 'spec_guard_work_queue_retries_total',
    help: 'Failed runs a work queue will retry with backoff, by queue.',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });

  /** A work queue's own metrics, under its name (a fixed few: the label set stays bounded). */
  queue(name: 'watcher' | 'namespaces' | 'registration' | 'certificates'): QueueMetrics {
    return {
      depth: (keys) => this.queueDepth.set({ queue: name }, keys),
      retried: () => this.queueRetries.inc({ queue: name }),
      givenUp: () => this.workGivenUp.inc({ queue: name }),
    };
  }

  readonly blindWindows = new Counter({
    name: 'spec_guard_blind_windows_total',
    help: 'Times an admission layer object was found missing or changed by someone else (a blind window began), by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly trustedIdentityMissing = new Gauge({
    name: 'spec_guard_trusted_identity_missing',
    help: 'A trusted user (trust.users) that is a service account which does not exist, found at start: 1. Labels come from the configuration.',
    labelNames: ['identity'] as const,
    registers: [this.registry],
  });

  readonly selfUntrusted = new Gauge({
    name: 'spec_guard_self_untrusted',
    help: 'Admission objects registered (by another install) without this replica among their trusted identities, by kind: its own reverts are refused.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly layerIntact = new Gauge({
    name: 'spec_guard_admission_layer_intact',
    help: '1 while an admission layer (guard, stamp, tombstone) has been in force without a gap, as last verified; 0 in a blind window.',
    labelNames: ['layer'] as const,
    registers: [this.registry],
  });

  readonly unattributed = new Counter({
    name: 'spec_guard_unattributed_changes_total',
    help: 'Unstamped changes and untombstoned deletes that no layer vouches for (made in a blind window), by resource, change (update or delete) and action taken.',
    labelNames: ['resource', 'change', 'action'] as const,
    registers: [this.registry],
  });

  constructor(withProcessMetrics = true) {
    if (withProcessMetrics) collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  }

  /**
   * The series of one review, looked up once per label set: prom-client hashes a label object
   * on every call, a cost each review paid twice. The label values are bounded sets (webhook,
   * operation, the configured resources, decision reasons), and so are these maps.
   */
  private readonly reviewTimers = new Map<string, ReturnType<Histogram<'webhook'>['labels']>>();
  private readonly reviewCounts = new Map<string, ReturnType<Counter<'webhook' | 'operation' | 'resource' | 'decision'>['labels']>>();

  /** Starts timing one review; the returned function observes its duration. */
  timeReview(webhook: string): () => void {
    let child = this.reviewTimers.get(webhook);
    if (!child) this.reviewTimers.set(webhook, (child = this.admissionLatency.labels({ webhook })));
    return child.startTimer();
  }

  countReview(webhook: string, operation: string, resource: string, decision: string): void {
    const key = `${webhook} ${operation} ${resource} ${decision}`;
    let child = this.reviewCounts.get(key);
    if (!child) this.reviewCounts.set(key, (child = this.admissionRequests.labels({ webhook, operation, resource, decision })));
    child.inc();
  }
}
