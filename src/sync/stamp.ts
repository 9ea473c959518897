import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const STAMP_ANNOTATION = 'spec-guard.io/stamp';
/** JSON pointer of the stamp annotation. */
export const STAMP_POINTER = '/metadata/annotations/spec-guard.io~1stamp';

/**
 * Signs guarded views: `v1.<sha256 of the view>.<HMAC>`. The HMAC also covers the
 * object's identity, so a stamp copied onto another object is not valid there.
 */
export class Stamper {
  constructor(private readonly key: Buffer) {
    if (key.length < 32) throw new Error(`stamp key must be at least 32 bytes, got ${key.length}`);
  }

  static generateKey(): Buffer {
    return randomBytes(32);
  }

  private mac(viewHash: string, objectKey: string): string {
    return createHmac('sha256', this.key).update(`v1.${viewHash}.${objectKey}`).digest('base64url');
  }

  stamp(viewHash: string, objectKey: string): string {
    return `v1.${viewHash}.${this.mac(viewHash, objectKey)}`;
  }

  /** The view hash a valid stamp vouches for, or undefined when it is not valid. */
  verify(stamp: string | undefined, objectKey: string): string | undefined {
    if (!stamp) return undefined;
    const parts = stamp.split('.');
    if (parts.length !== 3 || parts[0] !== 'v1' || !/^[0-9a-f]{64}$/.test(parts[1]!)) return undefined;
    const expected = Buffer.from(this.mac(parts[1]!, objectKey));
    const given = Buffer.from(parts[2]!);
    return expected.length === given.length && timingSafeEqual(expected, given) ? parts[1] : undefined;
  }
}
