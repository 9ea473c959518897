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
 * Canonical JSON: sorted keys, every value exactly as given (null, {} and [] are values of
 * their own: Argo CD treats `automated: {}` unlike an absent `automated`). Returns undefined
 * for an absent value. Ignored members are left out. This runs on every admission request,
 * so it builds one string in one walk.
 */
export function canonicalJson(value: unknown, ignore?: IgnoreTree): string | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const sub = ignore === undefined ? undefined : ignore[String(i)];
      if (sub === true) continue;
      out += (out.length > 1 ? ',' : '') + (canonicalJson(value[i], sub) ?? 'null');
    }
    return `${out}]`;
  }
  if (!isPlainObject(value)) return JSON.stringify(value);
  const keys = Object.keys(value);
  if (keys.length > 1) keys.sort();
  let out = '{';
  for (const key of keys) {
    const sub = ignore === undefined ? undefined : ignore[key];
    if (sub === true) continue;
    const member = canonicalJson(value[key], sub);
    if (member === undefined) continue;
    out += (out.length > 1 ? ',' : '') + quote(key) + ':' + member;
  }
  return `${out}}`;
}
