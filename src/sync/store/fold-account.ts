/**
 * What a fold of the file store would keep and what it would drop. The snapshot and the log
 * hold live lines (each entry's newest) and dead ones (an entry's older lines, deleted
 * entries, touches, tombstones and commit lines, all folded into the next snapshot). A fold
 * rewrites the live lines, so it pays once the dead outweigh them: the files stay within
 * twice the live state, and every byte a fold writes was preceded by at least as many
 * written and then superseded. A state that only grows (a first start) is never folded: an
 * append-only log holds nothing a fold would drop.
 *
 * Everything is counted in characters (a line's `length`, as read or written): the same
 * measure on both sides, and no pass over each line to count its UTF-8 bytes.
 */
export class FoldAccount {
  /** The size of the line that holds each entry now, in the snapshot or the log. */
  private readonly lines = new Map<string, number>();
  private liveChars = 0;
  /** The snapshot's header and trailer: rewritten by every fold, so live. */
  private frameChars = 0;
  private fileChars = 0;

  constructor(private readonly floorChars: number) {}

  /** An entry's line was read or written (`size` its length), or the entry deleted (undefined). */
  line(key: string, size: number | undefined): void {
    const before = this.lines.get(key) ?? 0;
    if (size === undefined) this.lines.delete(key);
    else this.lines.set(key, size);
    this.liveChars += (size ?? 0) - before;
  }

  /** Characters added to the files (appended to the log). */
  wrote(chars: number): void {
    this.fileChars += chars;
  }

  /** A snapshot of `chars`, whose entry lines were just counted, is all there is (the log empty, or not read yet): the rest of it is its header and trailer. */
  folded(chars: number): void {
    this.fileChars = chars;
    this.frameChars = chars - this.liveChars;
  }

  /** Forgets every line (before a fold or a load counts them again). */
  reset(): void {
    this.lines.clear();
    this.liveChars = 0;
    this.frameChars = 0;
    this.fileChars = 0;
  }

  get deadChars(): number {
    return this.fileChars - this.liveChars - this.frameChars;
  }

  /** Dead lines outweigh the live ones (and the floor, below which a fold is not worth its write). */
  get foldDue(): boolean {
    return this.deadChars > Math.max(this.liveChars + this.frameChars, this.floorChars);
  }
}
