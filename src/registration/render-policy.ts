import type { Policy, Rule, IgnoreTree } from '../guard/index.js';
import { FINALIZERS_POINTER, KUBERNETES_FINALIZERS, messages, parsePointer } from '../guard/index.js';
import { celList, celMessage, celString, celStamp, celValueAt, identityExpression, membership, namespaceLeavesExpression, namespaceUpdateRule, type CelScope } from './cel.js';
import { ADMISSION_OBJECT_NAME, MANAGED_BY_LABEL, namespaceSelector, resourceRules } from './shared.js';

/**
 * Layer 0: a ValidatingAdmissionPolicy and its binding, evaluated inside the apiserver, so
 * they hold while every spec-guard replica is down. They decide what needs no canonical
 * value: an untrusted writer may not change a guarded pointer (ignored pointers aside), the
 * stamp, or whether the object is in a guarded selection, nor create or delete a guarded
 * object unless the rule allows it. Pure: rendered from the policy alone.
 */

/** Rules the policy holds the line for: the modes that refuse or undo untrusted changes. */
export function policyCovers(rule: Rule): boolean {
  if (rule.mode !== 'enforce' && rule.mode !== 'rewrite') return false;
  // CEL compares map members by key; an ignored list element cannot be expressed, so such a
  // rule stays with the (fail-closed) webhook.
  return !rule.config.ignore.some((p) => parsePointer(p).some((t) => /^(\d+|-)$/.test(t)));
}

/** CEL: `a` equals `b` except at the ignored members (descending into maps only). */
function equalExcept(a: string, b: string, tree: IgnoreTree | undefined, depth = 0): string {
  if (!tree) return `${a} == ${b}`;
  const k = `k${depth}`;
  const skipped = celList(Object.keys(tree));
  const parts = [
    `${a}.all(${k}, ${k} in ${skipped} || (${k} in ${b} && ${a}[${k}] == ${b}[${k}]))`,
    `${b}.all(${k}, ${k} in ${skipped} || ${k} in ${a})`,
  ];
  for (const [key, sub] of Object.entries(tree)) {
    if (sub === true) continue;
    const q = celString(key);
    parts.push(`((${q} in ${a}) == (${q} in ${b}) && (!(${q} in ${a}) || ${equalExcept(`${a}[${q}]`, `${b}[${q}]`, sub, depth + 1)}))`);
  }
  return `(${a} != null && ${b} != null && type(${a}) == map && type(${b}) == map ? (${parts.join(' && ')}) : ${a} == ${b})`;
}

/**
 * CEL: does `rule` govern this request? The object (old or new version) is in its selection
 * and in no earlier rule's for the same resource: the first match wins, as in the webhook.
 * `member(rule, root)` gives the membership of one version (inline, or a policy variable).
 */
export function governsExpression(policy: Policy, rule: Rule, member: (rule: Rule, root: string) => string): string {
  const either = (r: Rule) => `(${member(r, 'oldObject')} || ${member(r, 'object')})`;
  const earlier = policy.rules.filter((r) => r.index < rule.index && r.config.group === rule.config.group && r.config.resource === rule.config.resource);
  return [either(rule), ...earlier.map((r) => `!${either(r)}`)].join(' && ');
}

/**
 * CEL: layer 0 decides this untrusted request alone, so the webhooks need not be called: an
 * `enforce` rule it covers governs it, and the writer is not one whose writes need a normalizer.
 * In a webhook's conditions a rule that selects namespaces by label is never "decided": there
 * its membership is a superset (see CelScope), which must not skip the webhook for a later rule.
 */
export function policyDecidesExpression(policy: Policy, scope: CelScope): string | undefined {
  const decided = policy.rules.filter((r) => r.mode === 'enforce' && policyCovers(r) && !(scope === 'webhook' && r.config.namespaceSelector));
  if (!policy.config.admissionPolicy || decided.length === 0) return undefined;
  const member = (r: Rule, root: string) => membership(r, root, scope);
  const governs = decided.map((r) => `(${governsExpression(policy, r, member)})`).join(' || ');
  const normalized = policy.config.trust.normalizedWriters;
  return normalized.length ? `!(request.userInfo.username in ${celList(normalized)}) && (${governs})` : governs;
}

/** CEL: the pointers below `pointer` whose direct members differ between `a` and `b` (one level deep). */
function changedMembers(pointer: string, a: string, b: string, ignore: IgnoreTree | undefined): string {
  const skipped = celList(Object.entries(ignore ?? {}).filter(([, sub]) => sub === true).map(([k]) => k));
  const escaped = `k.replace('~', '~0').replace('/', '~1')`;
  const added = `${a}.filter(k, !(k in ${skipped}) && (!(k in ${b}) || ${a}[k] != ${b}[k])).map(k, ${celString(`${pointer}/`)} + ${escaped})`;
  const removed = `${b}.filter(k, !(k in ${skipped}) && !(k in ${a})).map(k, ${celString(`${pointer}/`)} + ${escaped})`;
  return `(${a} != null && ${b} != null && type(${a}) == map && type(${b}) == map ? (${added} + ${removed}).join(', ') : ${celString(pointer)})`;
}

const objectName = `request.kind.kind + ' ' + (request.namespace != '' ? request.namespace + '/' : '') + request.name`;
/** A denial of the policy's: guard/messages.ts's words, and which layer said them. */
const policyMessage = (cel: string) => `${cel} + ' (spec-guard admission policy)'`;

/** CEL: is the writer the consumer (trust.normalizedWriters)? */
export const consumerExpression = (consumers: string[]) => `request.userInfo.username in ${celList(consumers)}`;

/**
 * CEL for a door's value as a guard compares it: the garbage collector's finalizers left out,
 * none as an empty list (guard/guarded-view.ts).
 */
function ownedValue(pointer: string, value: string): string {
  if (pointer !== FINALIZERS_POINTER) return value;
  return `(${value} == null ? [] : ${value}.filter(f, !(f in ${celList(KUBERNETES_FINALIZERS)})))`;
}

/** One validation per door of a rule: who may change it, and the words when someone else does. */
function doorValidations(rule: Rule, on: string) {
  const { consumers } = rule.ownership;
  const isConsumer = consumers.length ? `${consumerExpression(consumers)} || ` : '';
  return rule.ownership.doors.map((door) => {
    const now = celValueAt('object', door.tokens);
    const before = celValueAt('oldObject', door.tokens);
    const equal = equalExcept(ownedValue(door.pointer, now), ownedValue(door.pointer, before), door.ignore);
    if (!door.canonical) {
      return {
        expression: `!(${on}) || ${isConsumer}${equal}`,
        messageExpression: policyMessage(celMessage(messages.consumerDoorDenial, celString(door.pointer), objectName, celString(consumers.join(', ')))),
        reason: 'Forbidden',
      };
    }
    // The consumer's own doors are its to change; writes that are equal only after
    // normalization (Argo CD's controller on /spec) are left to the webhook.
    const exempt = door.consumer || rule.config.normalizer ? isConsumer : '';
    // The message names what changed, one level below the door.
    const changed = changedMembers(door.pointer, now, before, door.ignore);
    return {
      expression: `!(${on}) || ${exempt}${equal}`,
      messageExpression: policyMessage(celMessage(messages.ownedDenial, celString(door.pointer), objectName, changed, "''")),
      reason: 'Forbidden',
    };
  });
}

type Validation = { expression: string; messageExpression: string; reason: string };

/** One rule's variables (its selection before and after; whether the policy governs the write) and validations. */
function ruleChecks(policy: Policy, rule: Rule, covered: boolean): { variables: Array<{ name: string; expression: string }>; validations: Validation[] } {
  const i = rule.index;
  const variables = [{ name: `old${i}`, expression: membership(rule, 'oldObject', 'policy') }, { name: `new${i}`, expression: membership(rule, 'object', 'policy') }];
  if (!covered) return { variables, validations: [] };
  const variable = (r: Rule, root: string) => `variables.${root === 'object' ? 'new' : 'old'}${r.index}`;
  variables.push({ name: `governs${i}`, expression: governsExpression(policy, rule, variable) });
  const on = (operation: string) => `request.operation == '${operation}' && variables.governs${i}`;
  const refuse = (expression: string, message: string): Validation => ({ expression, messageExpression: policyMessage(message), reason: 'Forbidden' });
  const validations: Validation[] = [];
  if (rule.config.creates === 'deny') validations.push(refuse(`!(${on('CREATE')})`, celMessage(messages.createDenial, objectName)));
  if (rule.config.deletes === 'deny') validations.push(refuse(`!(${on('DELETE')})`, celMessage(messages.deleteDenial, objectName)));
  validations.push(
    ...doorValidations(rule, on('UPDATE')),
    refuse(`!(${on('UPDATE')}) || ${celStamp('object')} == ${celStamp('oldObject')}`, celMessage(messages.stampDenial, objectName)),
    refuse(`!(${on('UPDATE')}) || variables.old${i} == variables.new${i}`, celMessage(messages.selectionDenial, objectName)),
  );
  return { variables, validations };
}

export function renderAdmissionPolicy(policy: Policy, excludedNamespaces: string[]) {
  const covered = policy.rules.filter(policyCovers);
  const trusted = identityExpression([...policy.config.trust.users, ...(policy.selfUser ? [policy.selfUser] : [])], policy.trustedGroups);
  const checks = policy.rules.map((rule) => ruleChecks(policy, rule, covered.includes(rule)));
  const variables = checks.flatMap((c) => c.variables);
  const validations = checks.flatMap((c) => c.validations);
  // Labelling a namespace out of a selection would unguard its objects at once.
  const leaves = namespaceLeavesExpression(covered);
  if (leaves) {
    validations.push({
      expression: `!(${leaves})`,
      messageExpression: policyMessage(celMessage(messages.namespaceDenial, 'request.name', "'spec-guard guards'")),
      reason: 'Forbidden',
    });
  }
  const metadata = { name: ADMISSION_OBJECT_NAME, labels: MANAGED_BY_LABEL };
  const vap = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata,
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [...resourceRules(covered, ['CREATE', 'UPDATE', 'DELETE']), ...(leaves ? [namespaceUpdateRule] : [])],
        namespaceSelector: namespaceSelector(policy, excludedNamespaces),
        matchPolicy: 'Equivalent',
      },
      matchConditions: [{ name: 'untrusted', expression: `!(${trusted})` }],
      variables,
      validations,
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata,
    spec: { policyName: ADMISSION_OBJECT_NAME, validationActions: ['Deny'] },
  };
  return covered.length ? { policy: vap, binding } : undefined;
}

export type AdmissionPolicyObjects = NonNullable<ReturnType<typeof renderAdmissionPolicy>>;
