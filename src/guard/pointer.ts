import { isRawNumber } from '../kube/json.js';
/** RFC 6901 JSON pointers, parsed once at configuration time. */

export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** A pointer of object keys and array indexes (numbers need no escaping). */
export function formatPointer(tokens: ReadonlyArray<string | number>): string {
  let pointer = '';
  for (const t of tokens) pointer += typeof t === 'number' ? `/${t}` : `/${t.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return pointer;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !isRawNumber(value);
}

/** The value at `tokens`, or undefined when any step is missing (own members only: no `constructor` of every object). */
export function getAt(root: unknown, tokens: readonly string[]): unknown {
  let node = root;
  for (const token of tokens) {
    if (Array.isArray(node)) node = node[Number(token)];
    else if (isPlainObject(node)) node = Object.hasOwn(node, token) ? node[token] : undefined;
    else return undefined;
  }
  return node;
}

/** The container `tokens` lead into, when every step but the last exists. */
function parentAt(root: unknown, tokens: readonly string[]): Record<string, unknown> | unknown[] | undefined {
  const parent = getAt(root, tokens.slice(0, -1));
  return Array.isArray(parent) || isPlainObject(parent) ? parent : undefined;
}

/** Sets the value at `tokens`, creating missing objects on the way. */
export function setAt(root: Record<string, unknown>, tokens: readonly string[], value: unknown): void {
  let node: Record<string, unknown> = root;
  tokens.forEach((token, i) => {
    if (i === tokens.length - 1) node[token] = value;
    else node = (node[token] ??= {}) as Record<string, unknown>;
  });
}

/** Does the container of `tokens` exist (so that a JSON patch can add or remove there)? */
export const hasParent = (root: unknown, tokens: readonly string[]): boolean => tokens.length === 0 || parentAt(root, tokens) !== undefined;

/** Removes the value at `tokens`, if there is one. */
export function removeAt(root: unknown, tokens: readonly string[]): void {
  const parent = parentAt(root, tokens);
  const last = tokens[tokens.length - 1]!;
  if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else if (parent) delete parent[last];
}
