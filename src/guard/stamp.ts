import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const STAMP_ANNOTATION = 'spec-guard.io/stamp';
/** JSON pointer of the stamp annotation. */
export const STAMP_POINTER = '/metadata/annotations/spec-guard.io~1stamp';

/** What a valid stamp vouches for. */
export interface StampClaim {
  /** sha256 of the guarded view. */
  hash: string;
  /**
   * Sequence of the trusted write, in milliseconds since the epoch, increasing per object:
   * a later trusted write always carries a higher one, so an older stamp replayed later
   * (with its older view, or on a recreated copy) is recognised as stale.
   */
  seq: number;
}

/** Checked stamps remembered. */
const MAX_CHECKED = 10_000;
/** The longest stamp of the right form: `v2.` + 64 + `.` + 16 + `.` + 43. */
const MAX_STAMP_CHARS = 128;

const STAMP_FORMAT = /^v2\.([0-9a-f]{64})\.(0|[1-9]\d{0,15})\.([A-Za-z0-9_-]{43})$/;

/**
 * Signs guarded views: `v2.<sha256 of the view>.<sequence>.<HMAC>`. The HMAC covers the
 * view, the sequence and the object's identity, so a stamp copied onto another object,
 * or with another sequence, is not valid.
 */
export class Stamper {
  /**
   * Stamps already checked, with their answer: every watch event of an object and every
   * review of it checks the same stamp again, and an HMAC each time is most of the check.
   * Bounded; the oldest checked is forgotten first.
   */
  private readonly checked = new Map<string, StampClaim | null>();

  constructor(private readonly key: Buffer) {
    if (key.length < 32) throw new Error(`stamp key must be at least 32 bytes, got ${key.length}`);
  }

  static generateKey(): Buffer {
    return randomBytes(32);
  }

  private mac(viewHash: string, seq: number, objectKey: string): string {
    return createHmac('sha256', this.key).update(`v2.${viewHash}.${seq}.${objectKey}`).digest('base64url');
  }

  stamp(viewHash: string, objectKey: string, seq: number): string {
    return `v2.${viewHash}.${seq}.${this.mac(viewHash, seq, objectKey)}`;
  }

  /** What a valid stamp claims, or undefined when it is not valid for this object. */
  read(stamp: string | undefined, objectKey: string): StampClaim | undefined {
    // A longer one is not of the form, and would fill memory if remembered.
    if (!stamp || stamp.length > MAX_STAMP_CHARS) return undefined;
    const id = `${objectKey}\n${stamp}`;
    let claim = this.checked.get(id);
    if (claim === undefined) {
      claim = this.check(stamp, objectKey);
      if (this.checked.size >= MAX_CHECKED) this.checked.delete(this.checked.keys().next().value!);
      this.checked.set(id, claim);
    }
    return claim ?? undefined;
  }

  private check(stamp: string, objectKey: string): StampClaim | null {
    const match = STAMP_FORMAT.exec(stamp);
    if (!match) return null;
    const [, hash, seqText, given] = match as unknown as [string, string, string, string];
    const seq = Number(seqText);
    const expected = Buffer.from(this.mac(hash, seq, objectKey));
    return timingSafeEqual(expected, Buffer.from(given)) ? Object.freeze({ hash, seq }) : null;
  }

  /** The view hash a valid stamp vouches for, or undefined when it is not valid. */
  verify(stamp: string | undefined, objectKey: string): string | undefined {
    return this.read(stamp, objectKey)?.hash;
  }
}

/** The sequence of the next trusted write: after `now` and after every sequence seen before. */
export const nextSeq = (now: number, ...seen: Array<number | undefined>): number => Math.max(now, ...seen.map((s) => (s ?? -1) + 1));
