/** More reverts of one object than this within WINDOW_MS is a fight with another writer. */
const FIGHT_REVERTS = 5;
const WINDOW_MS = 30_000;
const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 5 * 60_000;
/** Objects tracked at once; the least recently reverted go first. */
const MAX_TRACKED = 10_000;

interface History {
  times: number[];
  level: number;
  notBefore: number;
}

/**
 * Per object: when may the watcher revert it again? Another controller that keeps writing
 * the spec back would otherwise get a revert (and an Event) for every write, without end.
 * Past FIGHT_REVERTS reverts within WINDOW_MS, each further revert waits twice as long as
 * the one before (1 s … 5 min), until the object has been left alone for ten windows.
 * Pure: the clock is passed in.
 */
export class RevertThrottle {
  private readonly history = new Map<string, History>();

  /**
   * 0: revert now (recorded as done; `fightStarted` on the revert that starts a fight).
   * Otherwise the ms to wait before asking again.
   */
  decide(key: string, now: number): { waitMs: number; fightStarted: boolean } {
    let h = this.history.get(key);
    if (h && now < h.notBefore) return { waitMs: h.notBefore - now, fightStarted: false };
    if (!h || (h.times.length > 0 && now - h.times[h.times.length - 1]! > WINDOW_MS * 10)) h = { times: [], level: 0, notBefore: 0 };
    this.history.delete(key);
    this.history.set(key, h); // most recent last
    if (this.history.size > MAX_TRACKED) this.history.delete(this.history.keys().next().value!);
    h.times = h.times.filter((t) => now - t < WINDOW_MS);
    h.times.push(now);
    let fightStarted = false;
    if (h.level > 0 || h.times.length > FIGHT_REVERTS) {
      fightStarted = h.level === 0;
      h.notBefore = now + Math.min(FIRST_BACKOFF_MS * 2 ** h.level, MAX_BACKOFF_MS);
      h.level++;
    }
    return { waitMs: 0, fightStarted };
  }

  /** A trusted write settled the object: its history no longer counts. */
  forget(key: string): void {
    this.history.delete(key);
  }

  get size(): number {
    return this.history.size;
  }
}
