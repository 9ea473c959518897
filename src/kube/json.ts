/**
 * JSON as the apiserver means it. Kubernetes stores integers as int64: 9007199254740993 is
 * not 9007199254740992 there, though `JSON.parse` makes them equal. Integers beyond 2^53
 * are kept as raw JSON (their exact text), which `JSON.stringify` writes back verbatim.
 * Node.js 22+ gives a reviver the source text of each value; only a text with a run of 16
 * digits (any such integer has one) takes that slower path.
 */
interface RawJson {
  readonly rawJSON: string;
}
interface JsonWithSource {
  rawJSON(text: string): RawJson;
  isRawJSON(value: unknown): value is RawJson;
}
const exact = JSON as unknown as Partial<JsonWithSource>;

/** True when this Node.js can parse numbers exactly (22 and later). */
export const exactNumbersSupported = typeof exact.rawJSON === 'function' && typeof exact.isRawJSON === 'function';

const INTEGER = /^-?\d+$/;

const isDigit = (code: number) => code >= 48 && code <= 57;

/**
 * Does `text` hold a run of 16 digits? Any such run covers one position in every 16, so only
 * those are looked at (and the run around a digit found there): about a fifth of the CPU of
 * /\d{16}/, which tries a match at every digit of a 50 KB review.
 */
export function hasLongDigitRun(text: string): boolean {
  const n = text.length;
  for (let at = 15; at < n; at += 16) {
    if (!isDigit(text.charCodeAt(at))) continue;
    let start = at;
    while (start > 0 && isDigit(text.charCodeAt(start - 1))) start--;
    let end = at + 1;
    while (end < n && isDigit(text.charCodeAt(end))) end++;
    if (end - start >= 16) return true;
  }
  return false;
}

function revive(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value === 'number' && !Number.isSafeInteger(value) && context?.source && INTEGER.test(context.source)) {
    return exact.rawJSON!(context.source);
  }
  return value;
}

/** JSON.parse that keeps integers beyond 2^53 exact. */
export function parseJson(text: string): unknown {
  return exactNumbersSupported && hasLongDigitRun(text) ? JSON.parse(text, revive as (key: string, value: unknown) => unknown) : JSON.parse(text);
}

/** Is `value` an exact number kept as its JSON text? */
export const isRawNumber: (value: unknown) => boolean = exactNumbersSupported ? (v) => exact.isRawJSON!(v) : () => false;

/** A deep copy that keeps exact numbers (structuredClone cannot copy them: they are frozen raw JSON). */
export const cloneJson = <T>(value: T): T => (value === undefined ? value : (parseJson(JSON.stringify(value)) as T));
