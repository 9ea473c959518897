import { canonicalJson, isPlainObject } from '../guard/index.js';

/**
 * Is an admission object, as the apiserver holds it, enforcing exactly what spec-guard renders?
 * Not only "is every rendered field there" (an added objectSelector that matches nothing, an
 * excludeResourceRules, a binding's matchResources or a webhook's extra matchCondition switch
 * a layer off while every rendered field stays): every field that changes what the apiserver
 * enforces is compared, both sides with the apiserver's defaults taken out. Where the webhooks
 * send their requests (clientConfig) is not compared: GitOps installs point them elsewhere, and
 * the registrar puts spec-guard's own back.
 */

/** Values the apiserver fills in (admissionregistration v1 defaults): the same as absent. */
const DEFAULTS: Record<string, unknown> = { matchPolicy: 'Equivalent', failurePolicy: 'Fail', timeoutSeconds: 10, reinvocationPolicy: 'Never', scope: '*' };

/** `value` without defaulted fields, empty selectors, empty lists and objects left empty by that. */
function withoutDefaults(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutDefaults);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    if (DEFAULTS[key] !== undefined && member === DEFAULTS[key]) continue;
    const kept = withoutDefaults(member);
    // An empty selector selects everything, like none; an empty list or object says nothing.
    if ((Array.isArray(kept) && kept.length === 0) || (isPlainObject(kept) && Object.keys(kept).length === 0)) continue;
    out[key] = kept;
  }
  return out;
}

/** What an admission object enforces: a policy's or binding's spec; the webhooks but where they point. */
function enforcement(object: Record<string, unknown>): unknown {
  if (Array.isArray(object.webhooks)) return object.webhooks.map(({ clientConfig: _where, ...webhook }: Record<string, unknown>) => webhook);
  return object.spec;
}

export function enforcesAsRendered(actual: Record<string, unknown> | undefined, desired: Record<string, unknown>): boolean {
  if (!actual) return false;
  return canonicalJson(withoutDefaults(enforcement(actual))) === canonicalJson(withoutDefaults(enforcement(desired)));
}
