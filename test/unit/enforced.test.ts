import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '../../src/config/index.js';
import { Policy } from '../../src/guard/index.js';
import { renderAdmissionObjects } from '../../src/registration/index.js';
import { enforcesAsRendered } from '../../src/registration/enforced.js';
import { AGENT, SELF } from '../helpers/admission.js';

// A layer is intact only when every field that changes what the apiserver enforces is as
// rendered, after the apiserver's defaulting: what is added counts as much as what is removed.

const policy = new Policy(parseConfig(`trust:\n  users: [${AGENT}]\nresources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [argocd]\n    normalizer: argocd-application\n`, 't.yaml'), SELF);
const rendered = renderAdmissionObjects(policy, { endpoint: { url: 'https://127.0.0.1:8443' }, caBundle: '', excludedNamespaces: ['kube-system', 'spec-guard'] }) as Record<string, any>;

/** As the apiserver stores it: defaults filled in where the renderer left them out. */
function stored(kind: string): Record<string, any> {
  const object = structuredClone(rendered[kind]);
  object.metadata = { ...object.metadata, uid: 'u', resourceVersion: '7', managedFields: [] };
  for (const webhook of object.webhooks ?? []) {
    webhook.objectSelector ??= {};
    webhook.timeoutSeconds ??= 10;
    for (const rule of webhook.rules) rule.scope ??= '*';
  }
  if (kind === 'ValidatingAdmissionPolicyBinding') object.spec.matchResources = { namespaceSelector: {}, objectSelector: {}, matchPolicy: 'Equivalent' };
  if (kind === 'ValidatingAdmissionPolicy') object.spec.matchConstraints.objectSelector = {};
  return object;
}

describe('an admission object enforces what spec-guard renders', () => {
  it.each(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'])('%s as the apiserver stores it, defaults and all, is intact', (kind) => {
    expect(enforcesAsRendered(stored(kind), rendered[kind])).toBe(true);
  });

  it('where the webhooks point is not compared (a GitOps install points them elsewhere)', () => {
    const object = stored('ValidatingWebhookConfiguration');
    for (const webhook of object.webhooks) webhook.clientConfig = { service: { name: 'spec-guard', namespace: 'spec-guard', port: 443 } };
    expect(enforcesAsRendered(object, rendered.ValidatingWebhookConfiguration)).toBe(true);
  });

  const never = { matchLabels: { 'spec-guard.io/never': 'matches' } };
  const edits: Array<[string, string, (o: Record<string, any>) => void]> = [
    ['ValidatingAdmissionPolicyBinding', 'matchResources.objectSelector', (o) => void (o.spec.matchResources.objectSelector = never)],
    ['ValidatingAdmissionPolicyBinding', 'matchResources.excludeResourceRules', (o) => void (o.spec.matchResources.excludeResourceRules = [{ apiGroups: ['argoproj.io'], apiVersions: ['*'], resources: ['applications'], operations: ['*'] }])],
    ['ValidatingAdmissionPolicyBinding', 'validationActions Audit', (o) => void (o.spec.validationActions = ['Audit'])],
    ['ValidatingAdmissionPolicy', 'matchConstraints.objectSelector', (o) => void (o.spec.matchConstraints.objectSelector = never)],
    ['ValidatingAdmissionPolicy', 'an added matchCondition', (o) => void o.spec.matchConditions.push({ name: 'never', expression: 'false' })],
    ['ValidatingAdmissionPolicy', 'failurePolicy Ignore', (o) => void (o.spec.failurePolicy = 'Ignore')],
    ['ValidatingWebhookConfiguration', 'webhook objectSelector', (o) => void (o.webhooks[0].objectSelector = never)],
    ['ValidatingWebhookConfiguration', 'webhook namespaceSelector', (o) => void (o.webhooks[0].namespaceSelector = never)],
    ['ValidatingWebhookConfiguration', 'an added rule', (o) => void o.webhooks[0].rules.push({ apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: '*' })],
    ['MutatingWebhookConfiguration', 'an added matchCondition', (o) => void o.webhooks[0].matchConditions.push({ name: 'never', expression: 'false' })],
    ['MutatingWebhookConfiguration', 'timeoutSeconds', (o) => void (o.webhooks[0].timeoutSeconds = 1)],
  ];
  it.each(edits)('%s with %s is not intact', (kind, _what, edit) => {
    const object = stored(kind);
    edit(object);
    expect(enforcesAsRendered(object, rendered[kind])).toBe(false);
  });
});
