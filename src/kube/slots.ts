/**
 * At most `size` calls at once; the others wait for a slot in the order they asked. Bounded
 * by its callers: each waiting caller is one awaiting promise.
 */
export class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(size: number) {
    this.free = size;
  }

  /** Runs `call` once a slot is free (`onSlot` then: the wait is over), and frees the slot when it settles. */
  async use<T>(call: () => Promise<T>, onSlot?: () => void): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    onSlot?.();
    try {
      return await call();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next caller, so that none can overtake it.
      if (next) next();
      else this.free++;
    }
  }
}
