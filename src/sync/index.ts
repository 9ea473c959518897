export { GuardedView, sha256, type GuardedValues, type View, type PatchOp } from './guarded-view.js';
export { canonicalJson } from './canonical-json.js';
export { normalizers, argocdApplication, type Normalizer } from './normalizers.js';
export { Stamper, STAMP_ANNOTATION, STAMP_POINTER } from './stamp.js';
export { CanonicalCache, type CanonicalEntry, type CanonicalLookup, type Tombstone } from './cache.js';
export { Policy, type Rule, type UserInfo } from './policy.js';
export { objectKey } from './object-key.js';
export { parsePointer, formatPointer, getAt, isPlainObject } from './pointer.js';
export { stamperFromFile, stamperFromSecret, STAMP_KEY_SECRET } from './stamp-key.js';
