import { isPlainObject } from './pointer.js';

/**
 * Tree of ignored pointers below a guarded path: a key mapping to `true` is ignored
 * whole; a key mapping to a subtree is descended into.
 */
export interface IgnoreTree {
  [token: string]: IgnoreTree | true;
}

/**
 * Canonical JSON: sorted keys, and the generic rule that absent, null, {} and [] are
 * equal (object members whose value is empty are dropped, recursively). Returns
 * undefined for an empty value. Ignored members are left out.
 */
export function canonicalJson(value: unknown, ignore?: IgnoreTree): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const sub = ignore?.[String(i)];
      if (sub === true) continue;
      if (out.length > 1) out += ',';
      out += canonicalJson(value[i], sub) ?? 'null';
    }
    return out === '[' ? undefined : `${out}]`;
  }
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    let out = '{';
    for (const key of keys) {
      const sub = ignore?.[key];
      if (sub === true) continue;
      const member = canonicalJson(value[key], sub);
      if (member === undefined) continue;
      if (out.length > 1) out += ',';
      out += `${JSON.stringify(key)}:${member}`;
    }
    return out === '{' ? undefined : `${out}}`;
  }
  return JSON.stringify(value);
}
