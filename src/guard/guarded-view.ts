import { hash } from 'node:crypto';
import { canonicalJson, inCanonicalOrder, TooDeepError, type IgnoreTree } from './canonical-json.js';
import { diffValues } from './value-diff.js';
import type { Normalizer } from './normalizers.js';
import { getAt, isPlainObject, parsePointer } from './pointer.js';
import { cloneJson } from '../kube/json.js';

interface GuardedPath {
  pointer: string;
  /** `"pointer":`, the member's opening in the canonical text. */
  opening: string;
  tokens: string[];
  ignore: IgnoreTree | undefined;
}

/** Where an object's finalizers are, when a rule guards them. */
export const FINALIZERS_POINTER = '/metadata/finalizers';

/**
 * Finalizers that belong to Kubernetes' garbage collector, whoever guards the rest: it adds
 * and removes them around a Foreground or Orphan delete, and an object holding one can only
 * be deleted once the collector removed it.
 */
export const KUBERNETES_FINALIZERS = ['foregroundDeletion', 'orphan'];

/** The finalizers a guard compares: the collector's left out, none as absent (as the apiserver stores them). */
function ownedFinalizers(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  const owned = value.filter((f) => !KUBERNETES_FINALIZERS.includes(f as string));
  return owned.length ? owned : undefined;
}

/** The guarded values of an object, by pointer (absent paths are left out). */
export type GuardedValues = Record<string, unknown>;

export interface View {
  /**
   * sha256 hex of the view's canonical text, `{"pointer":value,...}` in the rule's order with
   * canonical JSON values (absent: null): equal views hash equal. Stamps in clusters carry
   * hashes of this text: it never changes.
   */
  hash: string;
}

/** Nodes without a prototype: a member named `constructor` of a guarded object finds no ignore rule of that name. */
export function buildIgnoreTree(guardedTokens: string[], ignorePointers: string[]): IgnoreTree | undefined {
  let tree: IgnoreTree | undefined;
  for (const pointer of ignorePointers) {
    const tokens = parsePointer(pointer);
    if (tokens.length <= guardedTokens.length || !guardedTokens.every((t, i) => tokens[i] === t)) continue;
    tree ??= Object.create(null) as IgnoreTree;
    let node = tree;
    const rest = tokens.slice(guardedTokens.length);
    rest.forEach((token, i) => {
      if (i === rest.length - 1) node[token] = true;
      else {
        const next = node[token];
        if (next === true) return;
        node = next ?? (node[token] = Object.create(null) as IgnoreTree);
      }
    });
  }
  return tree;
}

/**
 * The guarded view of one resource rule: the guarded pointers minus the ignore rules,
 * normalized and serialized canonically.
 */
export class GuardedView {
  private readonly paths: GuardedPath[];
  /**
   * True when the text must be written door by door (`joined`), never in one serialization: a
   * door ignores members below it, or a pointer is named twice (an object would hold it once;
   * the text has it twice).
   */
  private readonly doorByDoor: boolean;
  /** Names the set of guarded pointers: an entry learned under another set predates a door (see observe's adoption). */
  readonly id: string;

  constructor(
    guardedPaths: string[],
    private readonly ignorePointers: string[],
    private readonly normalizer?: Normalizer,
  ) {
    this.paths = guardedPaths.map((pointer) => {
      const tokens = parsePointer(pointer);
      return { pointer, opening: `${JSON.stringify(pointer)}:`, tokens, ignore: buildIgnoreTree(tokens, ignorePointers) };
    });
    this.doorByDoor = this.paths.some((path) => path.ignore !== undefined) || new Set(guardedPaths).size < guardedPaths.length;
    this.id = hash('sha256', JSON.stringify(guardedPaths), 'hex').slice(0, 12);
  }

  get pointers(): string[] {
    return this.paths.map((p) => p.pointer);
  }

  private normalized(path: GuardedPath, object: unknown): unknown {
    return this.normalize(path.pointer, getAt(object, path.tokens));
  }

  private normalize(pointer: string, value: unknown): unknown {
    const owned = pointer === FINALIZERS_POINTER ? ownedFinalizers(value) : value;
    return this.normalizer ? this.normalizer(pointer, owned) : owned;
  }

  /**
   * Serializes and hashes the view of `object` (one pass, one hash). Feeding each door to one
   * Hash object instead halved a 25 KB review's garbage but gained nothing under load, and cost
   * more for a watch event's 5 KB view (docs/benchmarks.md, round 19).
   */
  of(object: unknown): View {
    const values = this.paths.map((path) => this.normalized(path, object));
    return { hash: hash('sha256', this.wholeInOrder(values) ?? this.joined(values), 'hex') };
  }

  /**
   * The view's text in one native serialization, when every door is already canonical (the
   * apiserver writes keys sorted) and the view is not written door by door: the same text as
   * `joined`, built flat. Joined, the text is a chain of pieces that hashing copies into one
   * string first (25 KB of garbage per 25 KB review, docs/benchmarks.md, round 29). Pointers
   * begin with "/", so none is an array index that an object would move ahead of the others.
   */
  private wholeInOrder(values: unknown[]): string | undefined {
    if (this.doorByDoor || !values.every((value) => inCanonicalOrder(value))) return undefined;
    const view: Record<string, unknown> = {};
    this.paths.forEach((path, i) => (view[path.pointer] = values[i] ?? null));
    return JSON.stringify(view);
  }

  /** The view's text door by door: `{"pointer":canonical JSON,...}` in the rule's order, an absent door as null. */
  private joined(values: unknown[]): string {
    let text = '{';
    this.paths.forEach((path, i) => {
      text += `${text.length > 1 ? ',' : ''}${path.opening}${canonicalJson(values[i], path.ignore) ?? 'null'}`;
    });
    return `${text}}`;
  }

  /** The raw (not normalized) guarded values of `object`, for restoring them later. */
  valuesOf(object: unknown): GuardedValues {
    const values: GuardedValues = {};
    for (const path of this.paths) {
      const value = getAt(object, path.tokens);
      if (value !== undefined) values[path.pointer] = value;
    }
    return values;
  }

  /** Every pointer at which the view of `after` differs from the one of `before` (given by its values). */
  changedPointers(before: GuardedValues, after: unknown): string[] {
    const changed: string[] = [];
    for (const path of this.paths) {
      const old = this.normalize(path.pointer, before[path.pointer]);
      diffValues(old, this.normalized(path, after), path.ignore, [...path.tokens], changed);
    }
    return changed;
  }

  /**
   * JSON patch operations that make `incoming` carry `canonical`'s guarded values, with
   * ignored pointers keeping the incoming value.
   */
  restoreOps(canonical: GuardedValues, incoming: unknown): PatchOp[] {
    return this.paths.flatMap((path) => this.restoreWhole(path, canonical[path.pointer], incoming));
  }

  private restoreWhole(path: GuardedPath, canonical: unknown, incoming: unknown): PatchOp[] {
    const wanted = withIgnoredFrom(canonical, getAt(incoming, path.tokens), this.ignoreTokens(path));
    if (wanted !== undefined) return [{ op: 'add', path: path.pointer, value: wanted }];
    return getAt(incoming, path.tokens) !== undefined ? [{ op: 'remove', path: path.pointer }] : [];
  }

  /**
   * The fewest JSON patch operations that make `incoming` carry `canonical`'s guarded values:
   * only the members that differ (raw, not normalized: the result equals restoreOps'), so a
   * revert of one field sends one field. A path whose differences are many, or meet an
   * ignored member where the shapes differ, is restored whole.
   */
  revertOps(canonical: GuardedValues, incoming: unknown): PatchOp[] {
    const ops: PatchOp[] = [];
    for (const path of this.paths) {
      const wanted = canonical[path.pointer];
      const present = getAt(incoming, path.tokens);
      const members = wanted !== undefined && present !== undefined ? memberOps(path, wanted, present) : undefined;
      ops.push(...(members ?? this.restoreWhole(path, wanted, incoming)));
    }
    return ops;
  }

  private ignoreTokens(path: GuardedPath): string[][] {
    return this.ignorePointers
      .map(parsePointer)
      .filter((t) => t.length > path.tokens.length && path.tokens.every((p, i) => t[i] === p))
      .map((t) => t.slice(path.tokens.length));
  }
}

export type PatchOp =
  | { op: 'add' | 'replace' | 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string };

/** More member operations than this for one guarded path: the path is restored whole instead. */
const MAX_MEMBER_OPS = 64;

/**
 * The operations that turn `present` into `wanted` member by member, where the raw diff walk
 * finds them; undefined when that is not the way: too many, or a member to be set whole with
 * an ignored member below it (it would take the canonical value of what is not guarded).
 */
function memberOps(path: GuardedPath, wanted: unknown, present: unknown): PatchOp[] | undefined {
  const changed: string[] = [];
  try {
    diffValues(wanted, present, path.ignore, [...path.tokens], changed);
  } catch (err) {
    // A drifted value deeper than a guard compares: restored whole, never serialized.
    if (err instanceof TooDeepError) return undefined;
    throw err;
  }
  if (changed.length > MAX_MEMBER_OPS) return undefined;
  const ops: PatchOp[] = [];
  for (const pointer of changed) {
    const below = parsePointer(pointer).slice(path.tokens.length);
    if (ignoredWithin(path.ignore, below)) return undefined;
    const value = getAt(wanted, below);
    if (value === undefined) ops.push({ op: 'remove', path: pointer });
    else ops.push({ op: getAt(present, below) === undefined ? 'add' : 'replace', path: pointer, value });
  }
  return ops;
}

/** Does the ignore tree reach below `tokens` (an ignored member inside the value there)? */
function ignoredWithin(tree: IgnoreTree | undefined, tokens: string[]): boolean {
  let node: IgnoreTree | true | undefined = tree;
  for (const token of tokens) {
    if (node === undefined || node === true) return false;
    node = node[token];
  }
  return node !== undefined && node !== true;
}

/** A deep copy of `canonical` where each ignored pointer carries the value from `incoming`. */
function withIgnoredFrom(canonical: unknown, incoming: unknown, ignored: string[][]): unknown {
  if (ignored.length === 0) return canonical;
  const result: unknown = canonical === undefined ? undefined : cloneJson(canonical);
  for (const tokens of ignored) {
    const value = getAt(incoming, tokens);
    let node = result;
    for (let i = 0; i < tokens.length - 1 && isPlainObject(node); i++) {
      node = node[tokens[i]!] ??= {};
    }
    if (!isPlainObject(node)) continue;
    const last = tokens[tokens.length - 1]!;
    if (value === undefined) delete node[last];
    else node[last] = value;
  }
  return result;
}
