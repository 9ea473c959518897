import type { PatchOp } from './guarded-view.js';

export type Webhook = 'mutate' | 'validate';

/** What the decision core answers; the webhook layer turns it into a response. */
export type Decision =
  | { kind: 'allow'; reason: AllowReason; patch?: PatchOp[]; warnings?: string[]; tombstone?: boolean }
  | { kind: 'deny'; message: string; changed: string[] };

export type AllowReason =
  | 'unguarded'
  | 'subresource'
  | 'trusted'
  /** A trusted write through a break-glass group: loud. */
  | 'break-glass'
  | 'unchanged'
  | 'mode-off'
  | 'warned'
  | 'rewritten'
  | 'rule-allows';
