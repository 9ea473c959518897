import { describe, expect, it } from '@jest/globals';
import { ConfigError, parseConfig } from '../../src/config/index.js';
import { decide, namePatternRegex, Policy } from '../../src/guard/index.js';
import { renderAdmissionObjects } from '../../src/registration/index.js';
import { renderRbac } from '../../src/registration/render-rbac.js';
import { applyDecision, context, review, SELF, AGENT } from '../helpers/admission.js';

/** The autonomous-agents layout: agents' Applications by namespace label, their AppProject copies by annotation. */
const AGENT_LABEL = 'spec-guard.io/autonomous-agent';
const SOURCE_UID = 'argocd.argoproj.io/source-uid';
const agentNamespaces = `namespaceSelector:\n  matchLabels: {${AGENT_LABEL}: "true"}`;
const labels: Record<string, Record<string, string>> = { argocd: {}, 'agent-a': { [AGENT_LABEL]: 'true' }, 'team-b': {} };

function aliceEdit(namespace: string, meta: { name?: string; annotations?: Record<string, string>; newAnnotations?: Record<string, string> } = {}) {
  const { request } = review('alice-update-spec');
  request.namespace = namespace;
  for (const o of [request.object!, request.oldObject!]) {
    o.metadata!.namespace = namespace;
    if (meta.name) o.metadata!.name = meta.name;
    if (meta.annotations) o.metadata!.annotations = { ...o.metadata!.annotations, ...meta.annotations };
  }
  if (meta.name) request.name = meta.name;
  if (meta.newAnnotations) request.object!.metadata!.annotations = meta.newAnnotations;
  return request;
}

describe('rules that select namespaces by label', () => {
  it('guard the objects of every labelled namespace, including one the configuration never named, and nothing elsewhere', () => {
    const t = context(agentNamespaces);
    t.ctx.namespaceLabels = (ns) => labels[ns];
    expect(decide(aliceEdit('agent-a'), 'validate', t.ctx).kind).toBe('deny');
    expect(decide(aliceEdit('team-b'), 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unguarded' });
    // A namespace labelled after spec-guard started: its labels decide, no configuration change.
    labels['agent-new'] = { [AGENT_LABEL]: 'true' };
    expect(decide(aliceEdit('agent-new'), 'validate', t.ctx).kind).toBe('deny');
  });

  it('refuse labelling a namespace out of the selection, for anyone untrusted; labelling one in is the administrator’s to do', () => {
    const t = context(agentNamespaces);
    const { request } = review('alice-update-spec');
    const namespaceUpdate = (before: Record<string, string>, after: Record<string, string>, user = 'alice') => ({
      ...request,
      kind: { group: '', version: 'v1', kind: 'Namespace' },
      resource: { group: '', version: 'v1', resource: 'namespaces' },
      namespace: undefined,
      name: 'agent-a',
      userInfo: { username: user },
      oldObject: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'agent-a', labels: before } },
      object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'agent-a', labels: after } },
    });
    const out = decide(namespaceUpdate({ [AGENT_LABEL]: 'true' }, {}), 'validate', t.ctx);
    expect(out.kind === 'deny' && out.message).toContain('takes namespace agent-a out of the namespaces whose applications spec-guard guards');
    expect(decide(namespaceUpdate({ [AGENT_LABEL]: 'true' }, { [AGENT_LABEL]: 'false' }), 'validate', t.ctx).kind).toBe('deny');
    expect(decide(namespaceUpdate({}, { [AGENT_LABEL]: 'true' }), 'validate', t.ctx).kind).toBe('allow');
    expect(decide(namespaceUpdate({ [AGENT_LABEL]: 'true' }, { [AGENT_LABEL]: 'true', team: 'x' }), 'validate', t.ctx).kind).toBe('allow');
    expect(decide(namespaceUpdate({ [AGENT_LABEL]: 'true' }, {}, AGENT), 'validate', t.ctx).kind).toBe('allow');
  });

  it('treat a namespace whose labels are unknown as selected (the guard errs on the safe side)', () => {
    const t = context(agentNamespaces);
    t.ctx.namespaceLabels = () => undefined;
    expect(decide(aliceEdit('never-seen'), 'validate', t.ctx).kind).toBe('deny');
  });

  it('exclude naming namespaces, and check their expressions, with clear errors', () => {
    expect(() => parseConfig(`resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [a]\n    ${agentNamespaces.replace('\n', '\n    ')}\n`, 'c.yaml')).toThrow(/namespaces and namespaceSelector exclude each other/);
    expect(() => parseConfig('resources:\n  - group: argoproj.io\n    resource: applications\n    namespaceSelector:\n      matchExpressions: [{key: a, operator: In}]\n', 'c.yaml')).toThrow(ConfigError);
    expect(() => parseConfig('resources:\n  - group: argoproj.io\n    resource: applications\n    names: ["Agent_*"]\n', 'c.yaml')).toThrow(/must be a name pattern/);
  });
});

describe('an object without metadata', () => {
  it('is selected as one with empty metadata, never as no object (found by the fuzzer: its spec change was admitted)', () => {
    const t = context('namespaces: [argocd]');
    const { request } = review('alice-update-spec');
    delete request.object!.metadata;
    delete request.oldObject!.metadata;
    expect(decide(request, 'validate', t.ctx).kind).toBe('deny');
  });
});

describe('rules that select objects by name pattern and annotation', () => {
  const copies = `names: ["*-*"]\nannotationSelector:\n  matchExpressions: [{key: ${SOURCE_UID}, operator: Exists}]`;

  it('guard the synced copies and leave the principal’s own objects to their administrators', () => {
    const t = context(copies);
    expect(decide(aliceEdit('argocd', { name: 'agent-a-default', annotations: { [SOURCE_UID]: 'u-1' } }), 'validate', t.ctx).kind).toBe('deny');
    expect(decide(aliceEdit('argocd', { name: 'default' }), 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unguarded' });
    // The annotation alone does not select a name outside the pattern.
    expect(decide(aliceEdit('argocd', { name: 'default', annotations: { [SOURCE_UID]: 'u-1' } }), 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unguarded' });
  });

  it('name the keys they select by for the resource, worked out once per configured resource (the watcher asks for every version)', () => {
    const t = context(copies);
    const keys = t.policy.selectionKeys('argoproj.io', 'applications');
    expect(keys).toEqual({ labelKeys: [], annotationKeys: [SOURCE_UID] });
    expect(t.policy.selectionKeys('argoproj.io', 'applications')).toBe(keys);
    // A resource no rule guards selects by nothing, and is not remembered.
    expect(t.policy.selectionKeys('', 'configmaps')).toEqual({ labelKeys: [], annotationKeys: [] });
    expect(t.policy.selectionKeys('', 'configmaps')).not.toBe(t.policy.selectionKeys('', 'configmaps'));
  });

  it('refuse leaving the selection by removing the annotation, even in a write that changes nothing else', () => {
    const t = context(copies);
    const request = aliceEdit('argocd', { name: 'agent-a-default', annotations: { [SOURCE_UID]: 'u-1' } });
    request.object!.spec = structuredClone(request.oldObject!.spec);
    const { [SOURCE_UID]: _removed, ...rest } = request.object!.metadata!.annotations!;
    request.object!.metadata!.annotations = rest;
    const decision = decide(request, 'validate', t.ctx);
    expect(decision.kind).toBe('deny');
    expect(decision.kind === 'deny' && decision.message).toContain('its selection');
  });

  it('refuse entering it: an untrusted create of a look-alike copy', () => {
    const t = context(copies);
    const { request } = review('agent-create');
    request.userInfo = { username: 'alice' };
    request.name = 'agent-a-fake';
    request.object!.metadata!.name = 'agent-a-fake';
    request.object!.metadata!.annotations = { [SOURCE_UID]: 'forged' };
    expect(decide(request, 'validate', t.ctx).kind).toBe('deny');
  });

  it('rewrite puts the selecting annotation back, and nothing else of the metadata', () => {
    const t = context(`mode: rewrite\n${copies}`);
    const request = aliceEdit('argocd', { name: 'agent-a-default', annotations: { [SOURCE_UID]: 'u-1', note: 'x' } });
    request.object!.spec = structuredClone(request.oldObject!.spec);
    request.object!.metadata!.annotations = { note: 'changed' };
    const decision = decide(request, 'mutate', t.ctx);
    expect(decision.kind).toBe('allow');
    const patched = applyDecision(request.object!, decision);
    expect(patched.metadata!.annotations).toEqual({ note: 'changed', [SOURCE_UID]: 'u-1' });
  });

  it('read a pattern the same in JavaScript and in the apiserver’s RE2: only "*" is special', () => {
    const re = new RegExp(namePatternRegex(['agent-*', 'x.y']));
    expect(['agent-a', 'agent-', 'x.y'].every((n) => re.test(n))).toBe(true);
    expect(['agents', 'xzy', 'a-agent-b'].some((n) => re.test(n))).toBe(false);
  });
});

describe('rendering of the new selections', () => {
  const config = `trust:\n  users: [${AGENT}]\nresources:\n  - group: argoproj.io\n    resource: applications\n    ${agentNamespaces.replace('\n', '\n    ')}\n  - group: argoproj.io\n    resource: appprojects\n    namespaces: [argocd]\n    names: ["*-*"]\n    annotationSelector:\n      matchExpressions: [{key: ${SOURCE_UID}, operator: Exists}]\n`;
  const policy = new Policy(parseConfig(config, 'c.yaml'), SELF);

  it('the admission policy reads the namespace’s labels, the name and the annotations', () => {
    const objects = renderAdmissionObjects(policy, { endpoint: { url: 'https://127.0.0.1:1' }, caBundle: '', excludedNamespaces: ['kube-system'] }) as Record<string, any>;
    const variables = objects.ValidatingAdmissionPolicy.spec.variables.map((v: { expression: string }) => v.expression).join('\n');
    expect(variables).toContain(`namespaceObject != null && ((has(namespaceObject.metadata.labels) && '${AGENT_LABEL}' in namespaceObject.metadata.labels`);
    expect(variables).toContain(`['${AGENT_LABEL}'] == 'true'`);
    expect(variables).toContain(`matches('^(.*-.*)$')`);
    expect(variables).toContain(`'${SOURCE_UID}' in`);
    const spec = objects.ValidatingAdmissionPolicy.spec;
    expect(spec.matchConstraints.resourceRules).toContainEqual(expect.objectContaining({ resources: ['namespaces', 'namespaces/status', 'namespaces/finalize'], operations: ['UPDATE'] }));
    expect(spec.validations.at(-1).expression).toContain(`'${AGENT_LABEL}' in`);
    // Webhook match conditions cannot see the namespace: the webhook decides, so none reads it.
    const webhooks = JSON.stringify([objects.MutatingWebhookConfiguration, objects.ValidatingWebhookConfiguration]);
    expect(webhooks).not.toContain('namespaceObject');
    expect(webhooks).toContain(SOURCE_UID);
  });

  it('RBAC: a cluster-wide watch of the resource, and read access to namespaces', () => {
    const roles = renderRbac(policy, { namespace: 'spec-guard', serviceAccount: 'spec-guard', register: true }) as Array<{ kind: string; rules?: Array<{ resources: string[]; verbs: string[] }> }>;
    const cluster = roles.find((o) => o.kind === 'ClusterRole')!;
    expect(cluster.rules).toContainEqual({ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] });
    expect(cluster.rules).toContainEqual(expect.objectContaining({ apiGroups: ['argoproj.io'], resources: ['applications'] }));
  });
});
