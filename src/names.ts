/** The names spec-guard gives what it creates and how it identifies itself, in one place. */

/** Field manager, Lease, admission objects, Event source, default service account and Service. */
export const SPEC_GUARD = 'spec-guard';
/** Where spec-guard runs unless told otherwise. */
export const DEFAULT_NAMESPACE = 'spec-guard';
/** On every object spec-guard creates. */
export const MANAGED_BY_LABEL = { 'app.kubernetes.io/managed-by': SPEC_GUARD } as const;
/** Secrets in spec-guard's namespace. */
export const TLS_SECRET = 'spec-guard-tls';
export const CA_SECRET = 'spec-guard-ca';
export const STAMP_KEY_SECRET = 'spec-guard-stamp-key';
export const DEFAULT_STATE_SECRET = 'spec-guard-state';
