import type { Logger } from '../log/index.js';

/**
 * A part of the running process. Parts start in the order they were added and stop in the
 * reverse order; every part hears when this replica gains or loses the lease. A part that
 * declares `leaderOnly` runs only while this replica leads: the lifecycle starts it at its
 * turn if leading, or when the lease is gained later, and stops it when the lease is lost.
 */
export interface Component {
  readonly name: string;
  start?(): Promise<void> | void;
  stop?(): Promise<void> | void;
  setLeading?(leading: boolean): void;
  leaderOnly?: boolean;
}

/** The process's parts: started in order, stopped in reverse, told of leadership changes. */
export class Lifecycle {
  private readonly parts: Component[] = [];
  private readonly started: Component[] = [];
  /** Leader-only parts whose turn came (running while leading). */
  private readonly reached = new Set<Component>();
  private leading = false;

  constructor(private readonly logger: Logger) {}

  add(...parts: Array<Component | undefined>): void {
    for (const part of parts) if (part) this.parts.push(part);
  }

  /** Starts every part not started yet, in order; a part that fails to start fails the start. */
  async start(): Promise<void> {
    for (const part of this.parts) {
      if (this.started.includes(part) || this.reached.has(part)) continue;
      if (part.leaderOnly) {
        this.reached.add(part);
        if (this.leading) await this.startLeaderPart(part);
        continue;
      }
      await part.start?.();
      this.started.push(part);
    }
  }

  /** Tells every part, started or about to be (a first election round comes before the watcher starts). */
  setLeading(leading: boolean): void {
    if (leading === this.leading) {
      for (const part of this.parts) part.setLeading?.(leading);
      return;
    }
    this.leading = leading;
    for (const part of this.parts) part.setLeading?.(leading);
    for (const part of this.reached) {
      const run = leading ? this.startLeaderPart(part) : this.stopLeaderPart(part);
      run.catch((err: Error) => this.logger.warn(leading ? 'starting a leader part failed' : 'stopping a leader part failed', { part: part.name, error: err.message }));
    }
  }

  private async startLeaderPart(part: Component): Promise<void> {
    if (this.started.includes(part)) return;
    this.started.push(part);
    await part.start?.();
  }

  private async stopLeaderPart(part: Component): Promise<void> {
    const at = this.started.indexOf(part);
    if (at === -1) return;
    this.started.splice(at, 1);
    await part.stop?.();
  }

  /** Stops the started parts in reverse order; one that fails to stop is logged and the rest still stop. */
  async stop(): Promise<void> {
    for (const part of [...this.started].reverse()) {
      try {
        await part.stop?.();
      } catch (err) {
        this.logger.warn('stopping failed', { part: part.name, error: (err as Error).message });
      }
    }
    this.started.length = 0;
    this.reached.clear();
  }
}
