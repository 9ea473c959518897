import type { NormalizerName } from '../config/schema.js';
import { isPlainObject } from './pointer.js';

/** Rewrites the value at a guarded pointer into a semantically equal, normal form. */
export type Normalizer = (pointer: string, value: unknown) => unknown;

/**
 * Go's zero value of a field as decoded from JSON: nil (JSON null), "", false, 0, or an
 * empty slice or map (Argo CD's IsZero methods test slices and maps with len() == 0).
 */
function isGoZero(value: unknown): boolean {
  if (value === null || value === undefined || value === '' || value === false || value === 0) return true;
  if (Array.isArray(value)) return value.length === 0;
  return isPlainObject(value) && Object.keys(value).length === 0;
}

/** Every member is zero, except those the Go IsZero method does not look at. */
const zeroExcept =
  (notLookedAt: ReadonlySet<string> = new Set()) =>
  (block: Record<string, unknown>) =>
    Object.entries(block).every(([key, value]) => notLookedAt.has(key) || isGoZero(value));

/**
 * ApplicationSourceKustomize.IsZero (argo-cd v3 pkg/apis/application/v1alpha1/types.go): the
 * force*, commonAnnotationsEnvsubst, labelWithoutSelector and labelIncludeTemplates flags are
 * not looked at, so a block holding only those is dropped by the controller.
 */
const kustomizeIsZero = zeroExcept(
  new Set(['forceCommonLabels', 'forceCommonAnnotations', 'commonAnnotationsEnvsubst', 'labelWithoutSelector', 'labelIncludeTemplates']),
);

/**
 * ApplicationSourceHelm.IsZero: every field is looked at; `valuesObject` counts through
 * ValuesIsEmpty(), where even `{}` renders as non-empty YAML, so any valuesObject keeps the block.
 */
const helmIsZero = (helm: Record<string, unknown>) =>
  (helm.valuesObject === undefined || helm.valuesObject === null) && zeroExcept()(helm);

/** ApplicationSourceJsonnet.IsZero: no extVars, tlas or libs. */
const jsonnetIsZero = (jsonnet: unknown) =>
  !isPlainObject(jsonnet) || ['extVars', 'tlas', 'libs'].every((k) => isGoZero(jsonnet[k]));

/**
 * NormalizeSource (argo-cd v3 util/argo/argo.go): zero kustomize and helm blocks become nil;
 * a zero directory block (recurse false, zero jsonnet) keeps only its include/exclude globs,
 * and becomes nil without them.
 */
function normalizeSource(source: unknown): unknown {
  if (!isPlainObject(source)) return source;
  const out: Record<string, unknown> = { ...source };
  if (isPlainObject(out.kustomize) && kustomizeIsZero(out.kustomize)) delete out.kustomize;
  if (isPlainObject(out.helm) && helmIsZero(out.helm)) delete out.helm;
  const directory = out.directory;
  if (isPlainObject(directory) && !directory.recurse && jsonnetIsZero(directory.jsonnet)) {
    const kept: Record<string, unknown> = {};
    if (typeof directory.exclude === 'string' && directory.exclude !== '') kept.exclude = directory.exclude;
    if (typeof directory.include === 'string' && directory.include !== '') kept.include = directory.include;
    if (Object.keys(kept).length) out.directory = kept;
    else delete out.directory;
  }
  return out;
}

/** SyncPolicy.IsZero: no syncOptions, automated, retry or managedNamespaceMetadata. */
const syncPolicyIsZero = (policy: unknown) =>
  policy === null ||
  (isPlainObject(policy) &&
    isGoZero(policy.syncOptions) &&
    ['automated', 'retry', 'managedNamespaceMetadata'].every((k) => policy[k] === undefined || policy[k] === null));

/**
 * Mirrors Argo CD's NormalizeApplicationSpec (argo-cd v3 util/argo/argo.go), rule by rule:
 * project "" → "default"; a zero syncPolicy is dropped; the single `source` is normalized.
 * Multi-source `sources` are left as written: Argo CD loops over copies of them, so its
 * normalization never changes them. Nothing else is equal: `automated: {}` turns auto-sync on.
 */
export const argocdApplication: Normalizer = (pointer, value) => {
  if (pointer !== '/spec' || !isPlainObject(value)) return value;
  const spec: Record<string, unknown> = { ...value };
  if (spec.project === undefined || spec.project === null || spec.project === '') spec.project = 'default';
  if ('syncPolicy' in spec && syncPolicyIsZero(spec.syncPolicy)) delete spec.syncPolicy;
  if (isPlainObject(spec.source)) spec.source = normalizeSource(spec.source);
  return spec;
};

export const normalizers: Record<NormalizerName, Normalizer> = {
  'argocd-application': argocdApplication,
};
