/**
 * Runs at most one task per key at a time. A task queued while one runs replaces any
 * task still waiting for that key: only the newest version of an object matters.
 */
export class KeyedQueue {
  private readonly running = new Set<string>();
  private readonly waiting = new Map<string, () => Promise<void>>();

  constructor(private readonly onError: (key: string, err: unknown) => void) {}

  push(key: string, task: () => Promise<void>): void {
    if (this.running.has(key)) {
      this.waiting.set(key, task);
      return;
    }
    this.running.add(key);
    void this.run(key, task);
  }

  private async run(key: string, task: () => Promise<void>): Promise<void> {
    for (let next: (() => Promise<void>) | undefined = task; next; next = this.waiting.get(key)) {
      this.waiting.delete(key);
      try {
        await next();
      } catch (err) {
        this.onError(key, err);
      }
    }
    this.running.delete(key);
  }

  get busy(): number {
    return this.running.size;
  }
}
