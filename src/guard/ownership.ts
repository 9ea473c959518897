import type { ResourceRuleConfig } from '../config/schema.js';
import { canonicalJson, type IgnoreTree } from './canonical-json.js';
import { buildIgnoreTree } from './guarded-view.js';
import { getAt, parsePointer } from './pointer.js';
import type { UserInfo } from './policy.js';

/**
 * What each writer owns of a guarded object (docs/decisions.md, "What each writer owns"): one
 * compiled model that the webhook's decision evaluates and registration/ prints as CEL.
 * The source of truth (trusted writers) owns every door; the consumer (trust.normalizedWriters)
 * may change its own doors; everyone else changes none.
 */
export interface Door {
  pointer: string;
  tokens: string[];
  ignore: IgnoreTree | undefined;
  /** One of guardedPaths: compared with the canonical copy, stamped, restored behind admission. */
  canonical: boolean;
  /** The consumer may change it (consumerPaths). */
  consumer: boolean;
  /** The consumer removes it once acted on (consumedPaths): a removal is never undone. */
  consumed: boolean;
}

export interface Ownership {
  doors: Door[];
  /** The consumer's identities (trust.normalizedWriters). */
  consumers: string[];
  /** Is this writer the consumer? */
  isConsumer(user: UserInfo | undefined): boolean;
  /** May the consumer change what lies at `pointer` (a pointer at or below one of its doors)? */
  consumerMay(pointer: string): boolean;
  /** The consumer-only doors (not canonical) whose value differs between `old` and `object`. */
  changedConsumerDoors(old: unknown, object: unknown): string[];
  /** Does `pointer` lie in a consumed door that `object` no longer has (a consumer's removal)? */
  consumedAway(pointer: string, object: unknown): boolean;
}

/** Is `pointer` at or below `door`? */
export const within = (pointer: string, door: string): boolean => pointer === door || pointer.startsWith(`${door}/`);

export function compileOwnership(rule: Pick<ResourceRuleConfig, 'guardedPaths' | 'consumerPaths' | 'consumedPaths' | 'ignore'>, consumers: string[]): Ownership {
  const pointers = [...rule.guardedPaths, ...rule.consumerPaths.filter((p) => !rule.guardedPaths.includes(p))];
  const doors: Door[] = pointers.map((pointer) => {
    const tokens = parsePointer(pointer);
    return {
      pointer,
      tokens,
      ignore: buildIgnoreTree(tokens, rule.ignore),
      canonical: rule.guardedPaths.includes(pointer),
      consumer: rule.consumerPaths.includes(pointer),
      consumed: rule.consumedPaths.includes(pointer),
    };
  });
  const consumerDoors = doors.filter((d) => d.consumer);
  const consumerOnly = consumerDoors.filter((d) => !d.canonical);
  const consumed = doors.filter((d) => d.consumed);
  const consumerSet = new Set(consumers);
  return {
    doors,
    consumers,
    isConsumer: (user) => user?.username !== undefined && consumerSet.has(user.username),
    consumerMay: (pointer) => consumerDoors.some((d) => within(pointer, d.pointer)),
    changedConsumerDoors: (old, object) =>
      consumerOnly.filter((d) => canonicalJson(getAt(old, d.tokens), d.ignore) !== canonicalJson(getAt(object, d.tokens), d.ignore)).map((d) => d.pointer),
    consumedAway: (pointer, object) => consumed.some((d) => within(pointer, d.pointer) && getAt(object, d.tokens) === undefined),
  };
}
