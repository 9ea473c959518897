/**
 * Every denial spec-guard gives, written once: the webhook fills them with values, the
 * admission policy (registration/cel.ts, celMessage) with CEL expressions, so both layers say
 * the same words.
 */

const WHERE = 'Make the change on the source-of-truth cluster; it is synced here.';

/** An untrusted write changes what the source of truth owns. */
export const ownedDenial = (owned: string, object: string, changed: string, note: string): string =>
  `spec-guard: ${owned} of ${object} is owned by the source of truth; this write changes ${changed}${note}. ${WHERE}`;

/** Someone but the source of truth and its consumer writes the consumer's own door (an Application's status). */
export const consumerDoorDenial = (door: string, object: string, consumers: string): string =>
  `spec-guard: ${door} of ${object} is written only by the source of truth and ${consumers}; this write changes ${door}. It is not yours to change here.`;

export const createDenial = (object: string): string =>
  `spec-guard: creating ${object} is reserved for the source of truth; create it on the source-of-truth cluster and it is synced here.`;

export const deleteDenial = (object: string): string =>
  `spec-guard: deleting ${object} is reserved for the source of truth; delete it on the source-of-truth cluster and it is removed here.`;

export const stampDenial = (object: string): string => `spec-guard: the stamp annotation of ${object} is written by spec-guard only. ${WHERE}`;

export const selectionDenial = (object: string): string =>
  `spec-guard: this write moves ${object} into or out of a guarded selection (its labels or annotations). ${WHERE}`;

export const namespaceDenial = (namespace: string, what: string): string =>
  `spec-guard: this write takes namespace ${namespace} out of the namespaces ${what}, by its labels. Only the source of truth's identity may; to stop guarding an agent, change spec-guard's configuration.`;
