import type { NormalizerName } from '../config/index.js';
import { isPlainObject } from './pointer.js';

/** Rewrites the value at a guarded pointer into a semantically equal, normal form. */
export type Normalizer = (pointer: string, value: unknown) => unknown;

/** Go's zero value, deeply: what Argo CD's IsZero() methods treat as unset. */
function isDeepZero(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (isPlainObject(value)) return Object.values(value).every(isDeepZero);
  return false;
}

function normalizeSource(source: unknown): unknown {
  if (!isPlainObject(source)) return source;
  let out: Record<string, unknown> | undefined;
  for (const block of ['helm', 'kustomize', 'directory'] as const) {
    if (block in source && isDeepZero(source[block])) {
      out ??= { ...source };
      delete out[block];
    }
  }
  return out ?? source;
}

/**
 * Mirrors Argo CD's NormalizeApplicationSpec: an empty project means `default`; a zero
 * syncPolicy and zero helm/kustomize/directory blocks of a source are dropped. Without
 * it the guard would fight the application-controller's own normalizing writes.
 */
export const argocdApplication: Normalizer = (pointer, value) => {
  if (pointer !== '/spec' || !isPlainObject(value)) return value;
  const spec: Record<string, unknown> = { ...value };
  if (spec.project === undefined || spec.project === null || spec.project === '') spec.project = 'default';
  if ('syncPolicy' in spec && isDeepZero(spec.syncPolicy)) delete spec.syncPolicy;
  if ('source' in spec) spec.source = normalizeSource(spec.source);
  if (Array.isArray(spec.sources)) spec.sources = spec.sources.map(normalizeSource);
  return spec;
};

export const normalizers: Record<NormalizerName, Normalizer> = {
  'argocd-application': argocdApplication,
};
