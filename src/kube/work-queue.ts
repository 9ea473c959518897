import { backoffMs } from './backoff.js';

/** What a queue reports of itself (kube/ knows no metrics library: the caller binds these to its own). */
export interface QueueMetrics {
  /** Keys waiting or running, after every change. */
  depth(keys: number): void;
  /** A failed run that will be retried. */
  retried(): void;
  /** A key given up after its retry cap (dropped until added again). */
  givenUp(): void;
}

export interface WorkQueueOptions<T> {
  /** Keys handled at once (default 32). */
  concurrency?: number;
  /** Failures in a row after which a key is given up until it is added again (default: never). */
  maxRetries?: number;
  /** A failed run: `retryInMs` undefined means the key was given up. */
  onError?: (key: string, err: unknown, retryInMs: number | undefined) => void;
  /** The item a failed run is retried with, unless a newer one was added meanwhile (default: the same). */
  retryWith?: (item: T) => T;
  metrics?: QueueMetrics;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Keys to reconcile, each handled by one run at a time, with the newest item added for it:
 * adding a key that is queued replaces its item (newest wins), adding one that is running
 * runs it once more afterwards with the new item. A run that throws is retried with the one
 * backoff policy (200 ms doubling to 30 s) up to `maxRetries`, with its own item unless a
 * newer one came; a run that succeeds resets the count. Bounded: at most one item per key,
 * `concurrency` runs at a time. Keeps its own metrics: depth, retries, keys given up.
 */
export class WorkQueue<T = undefined> {
  private readonly queued = new Set<string>();
  private readonly running = new Set<string>();
  private readonly again = new Set<string>();
  /** The newest item of each key not yet handed to a run. */
  private readonly items = new Map<string, T>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly waiters = new Map<string, Waiter[]>();
  private stopped = false;
  private idle: Array<() => void> = [];

  constructor(
    private readonly handler: (key: string, item: T) => Promise<void>,
    private readonly o: WorkQueueOptions<T> = {},
  ) {}

  /** Handles `key` with `item` as soon as a slot is free (or once more after the run in progress). */
  add(key: string, item?: T): void {
    if (this.stopped) return;
    this.items.set(key, item as T);
    this.enqueue(key);
  }

  /** As add(), but an item already waiting for `key` stays (it is newer than `item`). */
  offer(key: string, item: T, afterMs?: number): void {
    if (this.stopped) return;
    if (!this.items.has(key)) this.items.set(key, item);
    if (afterMs) this.addAfter(key, afterMs);
    else this.enqueue(key);
  }

  /** As add(), and resolves when a run that started after this call succeeds (rejects when the key is given up). */
  addAndWait(key: string): Promise<void> {
    const done = new Promise<void>((resolve, reject) => {
      const list = this.waiters.get(key) ?? [];
      list.push({ resolve, reject });
      this.waiters.set(key, list);
    });
    if (!this.items.has(key)) this.items.set(key, undefined as T);
    this.enqueue(key);
    return done;
  }

  /** Handles `key` after `ms` (an earlier add or addAfter wins), with its waiting item. */
  addAfter(key: string, ms: number): void {
    if (this.stopped || this.timers.has(key)) return;
    if (!this.items.has(key)) this.items.set(key, undefined as T);
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
    this.items.clear();
    this.o.metrics?.depth(this.running.size);
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
    this.o.metrics?.depth(this.size);
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
    const item = this.items.get(key) as T;
    this.items.delete(key);
    try {
      await this.handler(key, item);
      this.failures.delete(key);
      waiting.forEach((w) => w.resolve());
    } catch (err) {
      const failures = (this.failures.get(key) ?? 0) + 1;
      const givenUp = failures > (this.o.maxRetries ?? Infinity);
      const retryInMs = givenUp || this.stopped ? undefined : backoffMs(failures);
      this.o.onError?.(key, err, retryInMs);
      if (retryInMs === undefined) {
        if (givenUp) this.o.metrics?.givenUp();
        this.failures.delete(key);
        waiting.forEach((w) => w.reject(err));
      } else {
        this.o.metrics?.retried();
        this.failures.set(key, failures);
        if (!this.items.has(key)) this.items.set(key, this.o.retryWith ? this.o.retryWith(item) : item);
        // Those waiting are served by the retry.
        this.waiters.set(key, [...waiting, ...(this.waiters.get(key) ?? [])]);
        this.addAfter(key, retryInMs);
      }
    } finally {
      this.running.delete(key);
      if (this.again.delete(key)) this.enqueue(key);
      if (this.running.size === 0 && this.stopped) this.idle.splice(0).forEach((r) => r());
      this.pump();
      this.o.metrics?.depth(this.size);
    }
  }
}
