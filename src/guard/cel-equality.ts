import { isRawNumber } from '../kube/json.js';
import { canonicalJson } from './canonical-json.js';
import { isPlainObject } from './pointer.js';

/**
 * Equality as the admission policy's CEL sees it: numbers by value, so an int and a double
 * that round to the same float64 are equal (`1234567890123456789 == 1234567890123456789.0`),
 * which the webhook's exact comparison tells apart. A change that is equal here went past
 * the policy and the webhooks' match conditions unseen: their continuity cannot vouch for it.
 */
const numeric = (value: unknown): number | undefined =>
  typeof value === 'number' ? value : isRawNumber(value) ? Number((value as { rawJSON: string }).rawJSON) : undefined;

export function equalForCel(a: unknown, b: unknown): boolean {
  // The same value (nearly every member of a drifted spec): equal without serializing it.
  if (a === b) return true;
  const x = numeric(a);
  const y = numeric(b);
  if (x !== undefined && y !== undefined) return x === y;
  // Loops, not every() with a closure and key arrays: run over every guarded member of each drift.
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!equalForCel(a[i], b[i])) return false;
    return true;
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    let size = 0;
    for (const k in a) {
      size++;
      if (!Object.hasOwn(b, k) || !equalForCel(a[k], b[k])) return false;
    }
    for (const _ in b) size--;
    return size === 0;
  }
  return canonicalJson(a) === canonicalJson(b);
}
