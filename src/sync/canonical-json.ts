import { isPlainObject } from './pointer.js';

/**
 * Tree of ignored pointers below a guarded path: a key mapping to `true` is ignored
 * whole; a key mapping to a subtree is descended into.
 */
export interface IgnoreTree {
  [token: string]: IgnoreTree | true;
}

/** Object keys repeat across objects (name, value, …): quote each once. */
const quotedKeys = new Map<string, string>();
function quote(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedKeys.size < 10_000) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/**
 * Canonical JSON: sorted keys, and the generic rule that absent, null, {} and [] are
 * equal (object members whose value is empty are dropped, recursively). Returns
 * undefined for an empty value. Ignored members are left out. This runs on every
 * admission request, so it builds one string in one walk.
 */
export function canonicalJson(value: unknown, ignore?: IgnoreTree): string | undefined {
  if (value === null || value === undefined) return undefined;
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
    case 'boolean':
      return JSON.stringify(value);
    default:
      break;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    let out = '';
    for (let i = 0; i < value.length; i++) {
      const sub = ignore === undefined ? undefined : ignore[String(i)];
      if (sub === true) continue;
      out += (out ? ',' : '[') + (canonicalJson(value[i], sub) ?? 'null');
    }
    return out ? `${out}]` : undefined;
  }
  if (!isPlainObject(value)) return JSON.stringify(value);
  const keys = Object.keys(value);
  if (keys.length > 1) keys.sort();
  let out = '';
  for (const key of keys) {
    const sub = ignore === undefined ? undefined : ignore[key];
    if (sub === true) continue;
    const member = canonicalJson(value[key], sub);
    if (member === undefined) continue;
    out += (out ? ',' : '{') + quote(key) + ':' + member;
  }
  return out ? `${out}}` : undefined;
}
