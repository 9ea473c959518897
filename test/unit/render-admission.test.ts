import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '../../src/config/index.js';
import { renderAdmissionObjects } from '../../src/registration/index.js';
import { Policy } from '../../src/guard/index.js';
import { AGENT, SELF } from '../helpers/admission.js';

const options = { endpoint: { url: 'https://127.0.0.1:8443' }, caBundle: '', excludedNamespaces: ['kube-system', 'spec-guard'] };

function render(resources: string, extra = '') {
  const policy = new Policy(parseConfig(`trust:\n  users: [${AGENT}]\nresources:\n${resources}${extra}`, 'test.yaml'), SELF);
  return renderAdmissionObjects(policy, options) as Record<string, any>;
}

const failurePolicies = (configuration: { webhooks: Array<{ name: string; failurePolicy: string }> }) =>
  Object.fromEntries(configuration.webhooks.map((w) => [w.name, w.failurePolicy]));

const apps = (mode: string, more = '') => `  - group: argoproj.io\n    resource: applications\n    namespaces: [argocd]\n    mode: ${mode}\n${more}`;

describe('layer 0 rendering', () => {
  it('renders a policy and binding for enforce and rewrite rules, denying in the apiserver', () => {
    const objects = render(apps('enforce') + apps('rewrite').replace('[argocd]', '[apps-rewrite]'));
    expect(objects.ValidatingAdmissionPolicyBinding.spec).toEqual({ policyName: 'spec-guard', validationActions: ['Deny'] });
    const spec = objects.ValidatingAdmissionPolicy.spec;
    expect(spec.failurePolicy).toBe('Fail');
    expect(spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: ['argoproj.io'], apiVersions: ['*'], resources: ['applications'], operations: ['CREATE', 'UPDATE', 'DELETE'], scope: '*' },
    ]);
    expect(spec.matchConditions[0].expression).toContain(`'${AGENT}'`);
    expect(spec.matchConditions[0].expression).toContain(`'${SELF}'`);
    // Per rule: create, delete, guarded pointers, stamp, selection.
    expect(spec.validations).toHaveLength(10);
  });

  it('leaves warn-only configurations to the webhooks, which then fail open', () => {
    const objects = render(apps('warn'));
    expect(objects.ValidatingAdmissionPolicy).toBeUndefined();
    expect(failurePolicies(objects.MutatingWebhookConfiguration)['guard.spec-guard.io']).toBe('Ignore');
  });

  it('with the policy holding the line, the guard webhooks fail open; the tombstone webhook fails closed', () => {
    const objects = render(apps('enforce'));
    expect(failurePolicies(objects.MutatingWebhookConfiguration)).toEqual({ 'stamp.spec-guard.io': 'Ignore', 'guard.spec-guard.io': 'Ignore' });
    // The writers whose spec the policy leaves to the webhook (the application-controller) are checked fail-closed.
    expect(failurePolicies(objects.ValidatingWebhookConfiguration)).toEqual({ 'guard.spec-guard.io': 'Ignore', 'normalized.spec-guard.io': 'Fail', 'tombstone.spec-guard.io': 'Fail' });
    // Only the mutating guard skips what the policy decides; the validating one still matches.
    const condition = (c: any, name: string) => c.webhooks.find((w: any) => w.name === name).matchConditions.map((m: any) => m.name);
    expect(condition(objects.MutatingWebhookConfiguration, 'guard.spec-guard.io')).toEqual(['untrusted', 'guarded-change', 'not-decided-by-policy']);
    expect(condition(objects.ValidatingWebhookConfiguration, 'guard.spec-guard.io')).toEqual(['untrusted', 'guarded-change', 'not-normalized-writer']);
    expect(condition(objects.ValidatingWebhookConfiguration, 'normalized.spec-guard.io')).toEqual(['untrusted', 'guarded-change', 'normalized-writer']);
  });

  it('without the policy (admissionPolicy: false) the guard webhooks fail closed', () => {
    const objects = render(apps('enforce'), 'admissionPolicy: false\n');
    expect(objects.ValidatingAdmissionPolicy).toBeUndefined();
    expect(failurePolicies(objects.MutatingWebhookConfiguration)['guard.spec-guard.io']).toBe('Fail');
    expect(failurePolicies(objects.ValidatingWebhookConfiguration)['guard.spec-guard.io']).toBe('Fail');
  });

  it('a rule whose ignore pointer crosses a list index stays with a fail-closed webhook', () => {
    const objects = render(apps('enforce', '    ignore: [/spec/sources/0/targetRevision]\n'));
    expect(objects.ValidatingAdmissionPolicy).toBeUndefined();
    expect(failurePolicies(objects.MutatingWebhookConfiguration)['guard.spec-guard.io']).toBe('Fail');
  });

  it('compares ignored members out of the guarded value, level by level', () => {
    const objects = render(apps('enforce', '    ignore: [/spec/source/targetRevision, /spec/info]\n'));
    const guarded = objects.ValidatingAdmissionPolicy.spec.validations.find((v: any) => v.messageExpression.includes('is owned by the source of truth'));
    expect(guarded.expression).toContain("['source', 'info']");
    expect(guarded.expression).toContain("['targetRevision']");
    expect(guarded.messageExpression).toContain("'/spec/'");
  });

  it('the application-controller is exempt from the door comparisons only (its own doors, and the spec it normalizes), and only for rules with a normalizer or consumer doors', () => {
    const withNormalizer = render(apps('enforce', '    normalizer: argocd-application\n'));
    const without = render(apps('enforce'));
    const controller = 'system:serviceaccount:argocd:argocd-application-controller';
    const exempting = (o: any) => o.ValidatingAdmissionPolicy.spec.validations.filter((v: any) => v.expression.includes(controller)).map((v: any) => v.messageExpression);
    // One validation per door, each naming its door: /spec, /operation, the finalizers, skip-reconcile, /status.
    expect(exempting(withNormalizer)).toHaveLength(5);
    for (const door of ['/spec', '/operation', '/metadata/finalizers', 'argocd.argoproj.io~1skip-reconcile', '/status']) {
      expect(exempting(withNormalizer).filter((m: string) => m.includes(`'${door}'`) || m.includes(door))).not.toHaveLength(0);
    }
    expect(exempting(without)).toHaveLength(0);
  });
});
