import { z } from 'zod';
import { DEFAULT_STATE_SECRET } from '../names.js';

/** RFC 6901: "" or a sequence of "/token" with "~" escaped as "~0" or "~1". */
const jsonPointer = z
  .string()
  .regex(/^(\/([^~]|~[01])*)+$/, { message: 'must be an RFC 6901 JSON pointer starting with "/" (e.g. /spec)' });

const labelSelectorRequirement = z.strictObject({
  key: z.string().min(1),
  operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
  values: z.array(z.string()).optional(),
});

const labelSelector = z.strictObject({
  matchLabels: z.record(z.string(), z.string()).optional(),
  matchExpressions: z.array(labelSelectorRequirement).optional(),
});

/** A label selector's shape over annotations: `matchAnnotations` in place of `matchLabels`. */
const annotationSelector = z.strictObject({
  matchAnnotations: z.record(z.string(), z.string()).optional(),
  matchExpressions: z.array(labelSelectorRequirement).optional(),
});

/**
 * A name pattern: a Kubernetes name in which `*` stands for any run of characters. Globs,
 * not regular expressions, so that the webhook (JavaScript) and the apiserver (CEL's RE2)
 * cannot read one differently.
 */
const namePattern = z.string().regex(/^[a-z0-9.*-]{1,253}$/, {
  message: 'must be a name pattern: lower-case letters, digits, "-", "." and "*" (any run of characters), e.g. "agent-*"',
});

export const modes = ['enforce', 'rewrite', 'warn', 'off'] as const;
export const normalizerNames = ['argocd-application'] as const;

const resourceRuleFields = z.strictObject({
  group: z.string(),
  resource: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, {
    message: 'must be the lower-case plural resource name (e.g. applications, secrets), not the kind',
  }),
  /** Served version the watcher lists; admission matches any version. Argo CD's is the default. */
  version: z.string().min(1).optional(),
  namespaces: z.array(z.string().min(1)).min(1).optional(),
  /** Namespaces by their labels (e.g. every autonomous agent's namespace on the principal). */
  namespaceSelector: labelSelector.optional(),
  /** Objects whose name matches one of these patterns. */
  names: z.array(namePattern).min(1).optional(),
  labelSelector: labelSelector.optional(),
  annotationSelector: annotationSelector.optional(),
  mode: z.enum(modes).default('enforce'),
  /**
   * What the source of truth owns: compared with the canonical copy, stamped, restored behind
   * admission. Default: /spec, and with `normalizer: argocd-application` every door of an
   * Application (see ARGOCD_APPLICATION_DOORS).
   */
  guardedPaths: z.array(jsonPointer).min(1).optional(),
  /**
   * What the consumer (trust.normalizedWriters: Argo CD's application-controller) may change
   * besides the source of truth, and nobody else: each is one of guardedPaths (the consumer
   * consumes or edits it: /operation, /metadata/finalizers) or overlaps none of them (guarded
   * at admission only, no canonical copy: /status).
   */
  consumerPaths: z.array(jsonPointer).optional(),
  /**
   * Of guardedPaths, those the consumer removes once it acted on them (/operation): a removal
   * is never undone behind admission, since restoring it would act again.
   */
  consumedPaths: z.array(jsonPointer).optional(),
  ignore: z.array(jsonPointer).default([]),
  normalizer: z.enum(normalizerNames).optional(),
  creates: z.enum(['deny', 'allow']).default('deny'),
  deletes: z.enum(['deny', 'allow']).default('deny'),
  /**
   * What the watcher does with what no layer vouches for (a blind window: spec-guard's
   * admission objects were missing or altered): see docs/decisions.md, "Trust model".
   */
  blindWindow: z
    .strictObject({
      changes: z.enum(['revert', 'accept']).default('revert'),
      deletes: z.enum(['keep-deleted', 'recreate']).default('keep-deleted'),
    })
    .default({ changes: 'revert', deletes: 'keep-deleted' }),
});

/**
 * The doors of an Argo CD Application (docs/decisions.md, "What each writer owns"): the
 * source of truth owns the spec, the operation it asks for, the finalizers (does a delete
 * cascade?) and the annotation that stops reconciliation; the application-controller owns
 * status, consumes the operation and removes finalizers when it has cascaded.
 */
export const ARGOCD_APPLICATION_DOORS = {
  guardedPaths: ['/spec', '/operation', '/metadata/finalizers', '/metadata/annotations/argocd.argoproj.io~1skip-reconcile'],
  consumerPaths: ['/operation', '/metadata/finalizers', '/status'],
  consumedPaths: ['/operation'],
};

const overlapping = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

/** The doors a rule states, or its normalizer's profile, or /spec alone. */
function doors(rule: z.infer<typeof resourceRuleFields>, ctx: z.RefinementCtx) {
  const profile = rule.normalizer === 'argocd-application' && !rule.guardedPaths ? ARGOCD_APPLICATION_DOORS : undefined;
  const guardedPaths = rule.guardedPaths ?? profile?.guardedPaths ?? ['/spec'];
  const consumerPaths = rule.consumerPaths ?? (rule.guardedPaths ? [] : (profile?.consumerPaths ?? []));
  const consumedPaths = rule.consumedPaths ?? (rule.guardedPaths ? [] : (profile?.consumedPaths ?? []));
  consumerPaths.forEach((p, i) => {
    if (guardedPaths.includes(p) || !guardedPaths.some((g) => overlapping(g, p))) return;
    ctx.addIssue({ code: 'custom', path: ['consumerPaths', i], message: `must be one of guardedPaths or overlap none of them (${p} overlaps ${guardedPaths.find((g) => overlapping(g, p))})` });
  });
  consumedPaths.forEach((p, i) => {
    if (guardedPaths.includes(p) && consumerPaths.includes(p)) return;
    ctx.addIssue({ code: 'custom', path: ['consumedPaths', i], message: `must be one of guardedPaths and of consumerPaths (${p})` });
  });
  return { guardedPaths, consumerPaths, consumedPaths };
}

/** Argo CD's API version is known; any other group's must be stated, never guessed. */
const resourceRule = resourceRuleFields.transform((rule, ctx) => {
  const owned = doors(rule, ctx);
  if (rule.version) return { ...rule, ...owned, version: rule.version };
  if (rule.group === 'argoproj.io') return { ...rule, ...owned, version: 'v1alpha1' };
  ctx.addIssue({
    code: 'custom',
    path: ['version'],
    message: `required for group "${rule.group}": the served version spec-guard lists and watches (e.g. v1)`,
  });
  return z.NEVER;
});

const trust = z.strictObject({
  users: z.array(z.string().min(1)).default(['system:serviceaccount:argocd:argocd-agent-agent']),
  groups: z.array(z.string().min(1)).default([]),
  /**
   * Break glass: members of these groups write as the source of truth (admitted, stamped, never
   * reverted), each write loud (a kubectl warning, a log line, a metric, an alert). Grant the
   * group through RBAC impersonation to whoever may act in an emergency.
   */
  breakGlassGroups: z.array(z.string().min(1)).default([]),
  /** Removed: managedFields are not evidence of who wrote (any writer sets them). */
  fieldManagers: z
    .unknown()
    .optional()
    .refine((v) => v === undefined, {
      message: 'is no longer supported: managedFields are not evidence of who wrote; spec-guard attributes unstamped changes by the continuity of its admission layers (remove this field)',
    })
    .transform(() => undefined),
  /**
   * Untrusted writers whose spec writes are legitimate only after normalization (Argo CD's
   * application-controller): the in-apiserver policy leaves their spec changes to the
   * webhook, which compares normalized views.
   */
  normalizedWriters: z.array(z.string().min(1)).default(['system:serviceaccount:argocd:argocd-application-controller']),
});

const store = z.strictObject({
  type: z.enum(['memory', 'file', 'secret']).default('file'),
  path: z.string().min(1).default('spec-guard-state.json'),
  secretName: z.string().min(1).default(DEFAULT_STATE_SECRET),
});

export const configSchema = z.strictObject({
  trust: trust.default(trust.parse({})),
  resources: z.array(resourceRule).min(1, { message: 'must list at least one resource rule' }),
  store: store.default(store.parse({})),
  logLevel: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /**
   * Register the ValidatingAdmissionPolicy (Kubernetes >= 1.30) that holds the line inside
   * the apiserver while spec-guard is down. Off: the guard webhooks fail closed instead.
   */
  admissionPolicy: z.boolean().default(true),
});

export type Config = z.infer<typeof configSchema>;
export type ResourceRuleConfig = z.infer<typeof resourceRule>;
export type LabelSelector = z.infer<typeof labelSelector>;
export type AnnotationSelector = z.infer<typeof annotationSelector>;
export type Mode = (typeof modes)[number];
export type NormalizerName = (typeof normalizerNames)[number];
