import { canonicalJson, MAX_DEPTH, TooDeepError, type IgnoreTree } from './canonical-json.js';
import { formatPointer } from './pointer.js';
import { isRawNumber } from '../kube/json.js';

/** A path being walked: object keys, and array indexes as numbers (formatted only when reported). */
export type WalkPath = Array<string | number>;

/** A value the walk descends into member by member: a non-null object that is no exact number. */
const isWalkable = (value: unknown): value is object => typeof value === 'object' && value !== null && !isRawNumber(value);

/**
 * Appends the pointers at which `a` and `b` differ, under the canonical-JSON equality
 * (exact, key order aside). One walk over both trees: O(size); `at` is the path so far,
 * extended and restored in place so that equal subtrees allocate nothing. This runs on every
 * untrusted write and every watch event over the whole guarded value: two JSON primitives
 * that are not identical differ without being serialized.
 */
export function diffValues(a: unknown, b: unknown, ignore: IgnoreTree | undefined, at: WalkPath, out: string[]): void {
  if (a === b) return;
  if (at.length > MAX_DEPTH) throw new TooDeepError();
  const walkA = isWalkable(a);
  const walkB = isWalkable(b);
  if (walkA && walkB) {
    const arrayA = Array.isArray(a);
    if (arrayA !== Array.isArray(b)) {
      out.push(formatPointer(at));
      return;
    }
    if (!arrayA) {
      diffObjects(a as Record<string, unknown>, b as Record<string, unknown>, ignore, at, out);
      return;
    }
    if (diffArrays(a as unknown[], b as unknown[], ignore, at, out)) return;
  } else if (!walkA && !walkB && !isRawNumber(a) && !isRawNumber(b)) {
    // Two different primitives (or one absent): never the same JSON.
    out.push(formatPointer(at));
    return;
  }
  // Different shapes (an array's length, an exact number beside a plain one): equal only when they serialize alike.
  if (canonicalJson(a, ignore) !== canonicalJson(b, ignore)) out.push(formatPointer(at));
}

function diffObjects(a: Record<string, unknown>, b: Record<string, unknown>, ignore: IgnoreTree | undefined, at: WalkPath, out: string[]): void {
  let shared = 0;
  for (const key in a) {
    const sub = ignore?.[key];
    if (sub === true) continue;
    // Own members only: `b.constructor` is Object, not a member `b` lacks.
    const inB = Object.hasOwn(b, key);
    if (inB) shared++;
    const valueA = a[key];
    const valueB = inB ? b[key] : undefined;
    // Equal members (most of them: the same strings) are passed over without a call.
    if (valueA === valueB) continue;
    at.push(key);
    diffValues(valueA, valueB, sub, at, out);
    at.pop();
  }
  // Members only `b` has: looked for only when `b` has more members than those it shares.
  let count = 0;
  for (const key in b) if (ignore?.[key] !== true) count++;
  if (count === shared) return;
  for (const key in b) {
    const sub = ignore?.[key];
    if (sub === true || Object.hasOwn(a, key)) continue;
    at.push(key);
    diffValues(undefined, b[key], sub, at, out);
    at.pop();
  }
}

/** Arrays of one length, element by element; false when the lengths differ (compared whole). */
function diffArrays(a: unknown[], b: unknown[], ignore: IgnoreTree | undefined, at: WalkPath, out: string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const sub = ignore?.[i];
    if (sub === true || a[i] === b[i]) continue;
    at.push(i);
    diffValues(a[i], b[i], sub, at, out);
    at.pop();
  }
  return true;
}
