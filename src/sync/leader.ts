import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { isConflict, Resources, type KubeClient } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Lease as CoordinationLease, LeaseSpec } from 'kubernetes-types/coordination/v1.js';

/** A Lease as JSON on the wire, with its spec (spec-guard always writes one). */
type Lease = CoordinationLease & { spec: LeaseSpec };

/** MicroTime: RFC 3339 with exactly six fractional digits. */
const microTime = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export interface LeaderOptions {
  namespace: string;
  name: string;
  leaseDurationSeconds: number;
  identity?: string;
}

/**
 * Leader election on a coordination.k8s.io Lease, as client-go does it: expiry is
 * judged by when this replica last saw the lease change (not by the holder's clock),
 * the leader renews every third of the lease and steps down when it could not renew
 * for two thirds of it, and a leader that stops cleanly hands the lease back at once.
 */
export class LeaderElector {
  readonly identity: string;
  private leading = false;
  private timer: NodeJS.Timeout | undefined;
  private observed: { record: string; at: number } | undefined;
  private lastRenew = 0;
  private stopped = false;

  private readonly leases: Resources<Lease>;

  constructor(
    kube: KubeClient,
    private readonly options: LeaderOptions,
    private readonly logger: Logger,
    private readonly onChange: (leading: boolean) => void,
  ) {
    this.identity = options.identity ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.leases = Resources.of<Lease>(kube, 'coordination.k8s.io', 'v1', 'leases', options.namespace);
  }

  get isLeader(): boolean {
    return this.leading;
  }

  private setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    this.logger.info(leading ? 'became the leader' : 'stopped leading', { lease: `${this.options.namespace}/${this.options.name}`, identity: this.identity });
    this.onChange(leading);
  }

  private desired(previous?: Lease): Lease {
    const now = microTime(new Date());
    const takingOver = previous?.spec.holderIdentity !== this.identity;
    return {
      metadata: { name: this.options.name, namespace: this.options.namespace, resourceVersion: previous?.metadata?.resourceVersion },
      spec: {
        holderIdentity: this.identity,
        leaseDurationSeconds: this.options.leaseDurationSeconds,
        acquireTime: takingOver ? now : previous?.spec.acquireTime,
        renewTime: now,
        leaseTransitions: (previous?.spec.leaseTransitions ?? 0) + (takingOver && previous ? 1 : 0),
      },
    };
  }

  /** One round: create, renew or take over the lease when we may. */
  async tryAcquireOrRenew(): Promise<void> {
    const durationMs = this.options.leaseDurationSeconds * 1000;
    const lease = await this.leases.get(this.options.name, { timeoutMs: durationMs / 3 });
    if (!lease) {
      await this.leases.create(this.desired());
      this.lastRenew = Date.now();
      return this.setLeading(true);
    }
    const record = JSON.stringify(lease.spec);
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
    const holder = lease.spec.holderIdentity;
    const expired = !holder || this.observed.at + (lease.spec.leaseDurationSeconds ?? 15) * 1000 < Date.now();
    if (holder !== this.identity && !expired) return this.setLeading(false);
    await this.leases.replace(this.desired(lease), { timeoutMs: durationMs / 3 });
    this.lastRenew = Date.now();
    this.setLeading(true);
  }

  /** Starts electing; resolves after the first round, so the caller knows whether it leads. */
  start(): Promise<void> {
    const every = (this.options.leaseDurationSeconds * 1000) / 3;
    let first: () => void;
    const firstRound = new Promise<void>((r) => (first = r));
    const round = async () => {
      try {
        await this.tryAcquireOrRenew();
      } catch (err) {
        if (!isConflict(err)) this.logger.warn('leader election round failed', { error: (err as Error).message });
        // A leader that cannot renew steps down before its lease can be taken over.
        if (this.leading && Date.now() - this.lastRenew > (this.options.leaseDurationSeconds * 2000) / 3) this.setLeading(false);
      }
      first();
      if (!this.stopped) this.timer = setTimeout(round, every);
    };
    void round();
    return firstRound;
  }

  /** Stops; a leader releases the lease so that another replica takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (!this.leading) return;
    this.setLeading(false);
    try {
      const lease = await this.leases.get(this.options.name, { timeoutMs: 2000 });
      if (lease?.spec.holderIdentity !== this.identity) return;
      // PUT replaces the spec: without a holder, the lease is free at once.
      const { holderIdentity: _released, ...spec } = lease.spec;
      await this.leases.replace({ ...lease, spec }, { timeoutMs: 2000 });
    } catch (err) {
      this.logger.warn('could not release the lease', { error: (err as Error).message });
    }
  }
}
