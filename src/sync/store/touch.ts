import type { CanonicalEntry } from '../../guard/index.js';

/**
 * The fields of an entry that change while its canonical value stays: the revision it was
 * last seen at, the revision it is known canonical at (a relist raises it for every object
 * in sync), the uid of the copy that holds it.
 */
const TOUCH_FIELDS = new Set<string>(['uid', 'resourceVersion', 'knownAt']);

/** Characters of the viewHash a touch carries: enough to tell values apart, short enough to keep a touch small. */
const CHECK_CHARS = 16;

/**
 * A stored entry's new revisions, without its value (about 100 bytes instead of the entry's
 * kilobytes): what a relist writes for each object in sync. `check` names the value they
 * belong to; a touch that finds another value (or none) is not applied.
 */
export interface Touch {
  check: string;
  uid?: string;
  resourceVersion?: string;
  knownAt?: string;
}

const same = (a: unknown, b: unknown) => a === b || (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null && JSON.stringify(a) === JSON.stringify(b));

/**
 * `entry` as a touch of `stored`, when the two differ only in the touch fields (undefined
 * otherwise: the whole entry must be written). A touch without fields changes nothing.
 */
export function touchOf(stored: CanonicalEntry, entry: CanonicalEntry): Touch | undefined {
  const touch: Touch = { check: entry.viewHash.slice(0, CHECK_CHARS) };
  const before = stored as unknown as Record<string, unknown>;
  const after = entry as unknown as Record<string, unknown>;
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (same(before[field], after[field])) continue;
    if (!TOUCH_FIELDS.has(field) || typeof after[field] !== 'string') return undefined;
    (touch as unknown as Record<string, string>)[field] = after[field] as string;
  }
  return touch;
}

/** True when the touch changes a field. */
export const touches = (touch: Touch): boolean => Object.keys(touch).length > 1;

/** `stored` with the touch's fields, if the touch belongs to its value; undefined if it does not apply. */
export function applyTouch(stored: CanonicalEntry | undefined, touch: Touch): CanonicalEntry | undefined {
  if (!stored || stored.viewHash.slice(0, CHECK_CHARS) !== touch.check) return undefined;
  const { check: _check, ...fields } = touch;
  return { ...stored, ...fields };
}

/** A touch read back from a store: only the fields a touch has, each a string. */
export function isTouch(value: unknown): value is Touch {
  if (typeof value !== 'object' || value === null) return false;
  const fields = Object.entries(value);
  return typeof (value as Touch).check === 'string' && fields.every(([k, v]) => (k === 'check' || TOUCH_FIELDS.has(k)) && typeof v === 'string');
}
