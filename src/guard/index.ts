// The pure domain: guarded views, canonical JSON, normalizers, stamps, policy, provenance
// (freshness, attribution), the watch-side observation and the admission decision.
// Nothing here does I/O; it imports only itself and Kubernetes' types and JSON rules.
export { GuardedView, buildIgnoreTree, FINALIZERS_POINTER, KUBERNETES_FINALIZERS, type GuardedValues, type View, type PatchOp } from './guarded-view.js';
export { canonicalJson, MAX_DEPTH, TooDeepError, type IgnoreTree } from './canonical-json.js';
export { normalizers, argocdApplication, type Normalizer } from './normalizers.js';
export { Stamper, STAMP_ANNOTATION, STAMP_POINTER, nextSeq, type StampClaim } from './stamp.js';
export { isFresh, CREATION_SKEW_MS } from './freshness.js';
export { attributeChange, attributeDelete, heldUntilWrite, laterRevision, UNKNOWN_LAYERS, type Attribution, type ContinuityRecord, type LayerRecord, type Layers, type LayerState, type Period } from './attribution.js';
export { layerPeriods, succeeding, verifiedUpTo } from './periods.js';
export { entryValues, packEntry, type CanonicalEntry, type CanonicalLookup, type Tombstone } from './canonical-entry.js';
export { PackedValues, packValues, valuesText, type ValuesJson } from './packed-values.js';
export { Policy, type Rule, type UserInfo } from './policy.js';
export { compileOwnership, within, type Door, type Ownership } from './ownership.js';
export * as messages from './messages.js';
export { compileSelection, namePatternRegex, selectionRestoreOps, type NamespaceLabels, type Selectable, type Selection, type SelectionKeys } from './selection.js';
export { objectKey, parseObjectKey, resourceName, reviewedName } from './object-key.js';
export { planRepair, SELECTION, type RepairInput, type RepairPlan, type Report, type Unattributed } from './repair.js';
export { parsePointer, formatPointer, getAt, hasParent, isPlainObject, removeAt, setAt } from './pointer.js';
export { observe, resolve, type Observation, type ChangePlan } from './observe.js';
export { decide, type DecisionContext } from './decide.js';
export type { Decision, Webhook, AllowReason } from './decision.js';
export { confirms, expired, applyTombstoneChanges, tombstoneOf, TOMBSTONE_CONFIRM_MS, MAX_TOMBSTONES, MAX_TOMBSTONE_BYTES, TOMBSTONE_MAX_AGE_MS } from './tombstones.js';
export { RevertThrottle } from './revert-throttle.js';
export { stampPatch } from './stamp-patch.js';
