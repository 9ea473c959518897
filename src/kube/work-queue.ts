import { backoffMs } from './backoff.js';

export interface WorkQueueOptions {
  /** Keys handled at once (default 32). */
  concurrency?: number;
  /** Failures in a row after which a key is given up until it is added again (default: never). */
  maxRetries?: number;
  /** A failed run: `retryInMs` undefined means the key was given up. */
  onError?: (key: string, err: unknown, retryInMs: number | undefined) => void;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Keys to reconcile, each handled by one run at a time: adding a key that is queued changes
 * nothing, adding one that is running runs it once more afterwards (the handler reads the
 * newest state, so newest wins). A run that throws is retried with the one backoff policy
 * (200 ms doubling to 30 s) up to `maxRetries`; a run that succeeds resets the count.
 * Bounded: at most one entry per key, `concurrency` runs at a time.
 */
export class WorkQueue {
  private readonly queued = new Set<string>();
  private readonly running = new Set<string>();
  private readonly again = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly waiters = new Map<string, Waiter[]>();
  private stopped = false;
  private idle: Array<() => void> = [];

  constructor(
    private readonly handler: (key: string) => Promise<void>,
    private readonly o: WorkQueueOptions = {},
  ) {}

  /** Handles `key` as soon as a slot is free (or once more after the run in progress). */
  add(key: string): void {
    this.enqueue(key);
  }

  /** As add(), and resolves when a run that started after this call succeeds (rejects when the key is given up). */
  addAndWait(key: string): Promise<void> {
    const done = new Promise<void>((resolve, reject) => {
      const list = this.waiters.get(key) ?? [];
      list.push({ resolve, reject });
      this.waiters.set(key, list);
    });
    this.enqueue(key);
    return done;
  }

  /** Handles `key` after `ms` (an earlier add or addAfter wins). */
  addAfter(key: string, ms: number): void {
    if (this.stopped || this.timers.has(key)) return;
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.enqueue(key);
    }, ms);
    timer.unref();
    this.timers.set(key, timer);
  }

  /** Resets the failure count of `key` (a success elsewhere, e.g. a newer state). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** No further runs; resolves when the running ones have finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.queued.clear();
    for (const list of this.waiters.values()) list.forEach((w) => w.resolve());
    this.waiters.clear();
    if (this.running.size) await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  get size(): number {
    return this.queued.size + this.running.size;
  }

  private enqueue(key: string): void {
    if (this.stopped) return;
    const timer = this.timers.get(key);
    if (timer) {
      clearTimeout(timer);
      this.timers.delete(key);
    }
    if (this.running.has(key)) this.again.add(key);
    else this.queued.add(key);
    this.pump();
  }

  private pump(): void {
    const limit = this.o.concurrency ?? 32;
    for (const key of this.queued) {
      if (this.running.size >= limit) return;
      this.queued.delete(key);
      this.running.add(key);
      void this.run(key);
    }
  }

  private async run(key: string): Promise<void> {
    const waiting = this.waiters.get(key) ?? [];
    this.waiters.delete(key);
    try {
      await this.handler(key);
      this.failures.delete(key);
      waiting.forEach((w) => w.resolve());
    } catch (err) {
      const failures = (this.failures.get(key) ?? 0) + 1;
      const givenUp = failures > (this.o.maxRetries ?? Infinity);
      const retryInMs = givenUp || this.stopped ? undefined : backoffMs(failures);
      this.o.onError?.(key, err, retryInMs);
      if (retryInMs === undefined) {
        this.failures.delete(key);
        waiting.forEach((w) => w.reject(err));
      } else {
        this.failures.set(key, failures);
        // Those waiting are served by the retry.
        this.waiters.set(key, [...waiting, ...(this.waiters.get(key) ?? [])]);
        this.addAfter(key, retryInMs);
      }
    } finally {
      this.running.delete(key);
      if (this.again.delete(key)) this.enqueue(key);
      if (this.running.size === 0 && this.stopped) this.idle.splice(0).forEach((r) => r());
      this.pump();
    }
  }
}
