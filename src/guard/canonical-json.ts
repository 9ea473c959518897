import { isPlainObject } from './pointer.js';

/**
 * Tree of ignored pointers below a guarded path: a key mapping to `true` is ignored
 * whole; a key mapping to a subtree is descended into.
 */
export interface IgnoreTree {
  [token: string]: IgnoreTree | true;
}

/**
 * How deep a guarded value may nest. The apiserver accepts far deeper JSON; spec-guard
 * refuses it with a clear error instead of overflowing its stack on every request and
 * every watch event for the object.
 */
export const MAX_DEPTH = 1000;

export class TooDeepError extends Error {
  constructor() {
    super(`the guarded value nests deeper than ${MAX_DEPTH} levels`);
  }
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
  // Fast path: the apiserver writes map keys sorted (Go's encoding/json), so a parsed object
  // usually is canonical already and the native serializer gives the same bytes.
  if (ignore === undefined && inCanonicalOrder(value, 0)) return JSON.stringify(value);
  return serialize(value, ignore, 0);
}

/** True when every object below `value` has its keys in sorted order and no member is undefined (no allocation). */
export function inCanonicalOrder(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (depth > MAX_DEPTH) throw new TooDeepError();
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!inCanonicalOrder(value[i], depth + 1)) return false;
    return true;
  }
  let previous: string | undefined;
  for (const key in value) {
    if (previous !== undefined && !(previous < key)) return false;
    const member = (value as Record<string, unknown>)[key];
    if (member === undefined || !inCanonicalOrder(member, depth + 1)) return false;
    previous = key;
  }
  return true;
}

function serialize(value: unknown, ignore: IgnoreTree | undefined, depth: number): string | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (depth > MAX_DEPTH) throw new TooDeepError();
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const sub = ignore === undefined ? undefined : ignore[String(i)];
      if (sub === true) continue;
      out += (out.length > 1 ? ',' : '') + (serialize(value[i], sub, depth + 1) ?? 'null');
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
    const member = serialize(value[key], sub, depth + 1);
    if (member === undefined) continue;
    out += (out.length > 1 ? ',' : '') + quote(key) + ':' + member;
  }
  return `${out}}`;
}
