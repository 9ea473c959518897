import type { Logger } from '../log/index.js';

/**
 * A part of the running process. Parts start in the order they were added and stop in the
 * reverse order; every part hears when this replica gains or loses the lease (those that
 * act only as the leader, such as registration, the watcher's writes and renewals, need it).
 */
export interface Component {
  readonly name: string;
  start?(): Promise<void> | void;
  stop?(): Promise<void> | void;
  setLeading?(leading: boolean): void;
}

/** The process's parts: started in order, stopped in reverse, told of leadership changes. */
export class Lifecycle {
  private readonly parts: Component[] = [];
  private readonly started: Component[] = [];

  constructor(private readonly logger: Logger) {}

  add(...parts: Array<Component | undefined>): void {
    for (const part of parts) if (part) this.parts.push(part);
  }

  /** Starts every part not started yet, in order; a part that fails to start fails the start. */
  async start(): Promise<void> {
    for (const part of this.parts) {
      if (this.started.includes(part)) continue;
      await part.start?.();
      this.started.push(part);
    }
  }

  /** Tells every part, started or about to be (a first election round comes before the watcher starts). */
  setLeading(leading: boolean): void {
    for (const part of this.parts) part.setLeading?.(leading);
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
  }
}
