/**
 * JSON as the apiserver means it. Kubernetes stores integers as int64: 9007199254740993 is
 * not 9007199254740992 there, though `JSON.parse` makes them equal. Integers beyond 2^53
 * are kept as raw JSON (their exact text), which `JSON.stringify` writes back verbatim.
 * Node.js 22+ gives a reviver the source text of each value; only a text that may hold such
 * an integer (mayHoldLongInteger) takes that slower path.
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
const isSpace = (code: number) => code === 32 || code === 10 || code === 13 || code === 9;
/** Can an integer token begin after this character (NaN: the start of the text)? After `:`, `,`, `[`, its sign, a space. */
const opensNumber = (code: number) => Number.isNaN(code) || code === 58 || code === 44 || code === 91 || code === 45 || isSpace(code);
/** Can an integer token end before this character (NaN: the end of the text)? A `.` or an `e` would make it a float. */
const closesNumber = (code: number) => Number.isNaN(code) || code === 44 || code === 125 || code === 93 || isSpace(code);

/**
 * Can `text` hold an integer of 16 digits or more, which JSON.parse may round? Only a run of
 * 16 digits can be one, and any such run covers one position in every 16: only those are
 * looked at (and the run around a digit found there), about a fifth of the CPU of /\d{16}/.
 * A run inside a string is no integer, and most show it by what is around them: a stamp's
 * hex hash holds a run of 16 digits in one object of 100, and with it 99 % of list pages did,
 * which then took the reviver's path (five times the CPU of JSON.parse).
 */
export function mayHoldLongInteger(text: string): boolean {
  const n = text.length;
  for (let at = 15; at < n; at += 16) {
    if (!isDigit(text.charCodeAt(at))) continue;
    let start = at;
    while (start > 0 && isDigit(text.charCodeAt(start - 1))) start--;
    let end = at + 1;
    while (end < n && isDigit(text.charCodeAt(end))) end++;
    if (end - start >= 16 && opensNumber(text.charCodeAt(start - 1)) && closesNumber(text.charCodeAt(end))) return true;
    // Past the run: a long run is walked once, never once per position looked at in it.
    at = end;
  }
  return false;
}

/**
 * Has this process made an exact number yet? Only `revive` makes them, and only for a text
 * that held an integer beyond 2^53, which guarded objects seldom do: until then no value is
 * one, and `isRawNumber`, which the comparisons ask of every value they walk, is a load
 * instead of a call (a tenth of an untrusted write's decision).
 */
let exactNumbersMade = false;

function revive(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value === 'number' && !Number.isSafeInteger(value) && context?.source && INTEGER.test(context.source)) {
    exactNumbersMade = true;
    return exact.rawJSON!(context.source);
  }
  return value;
}

/** JSON.parse that keeps integers beyond 2^53 exact. */
export function parseJson(text: string): unknown {
  return exactNumbersSupported && mayHoldLongInteger(text) ? JSON.parse(text, revive as (key: string, value: unknown) => unknown) : JSON.parse(text);
}

/** Is `value` an exact number kept as its JSON text? */
export const isRawNumber = (value: unknown): boolean => exactNumbersMade && exact.isRawJSON!(value);

/** A deep copy that keeps exact numbers (structuredClone cannot copy them: they are frozen raw JSON). */
export const cloneJson = <T>(value: T): T => (value === undefined ? value : (parseJson(JSON.stringify(value)) as T));
