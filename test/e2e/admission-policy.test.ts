import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { STAMP_ANNOTATION } from '../../src/guard/index.js';
import {
  AGENT,
  ALICE,
  CONTROLLER,
  agentApply,
  application,
  fixture,
  getJson,
  inCluster,
  kubectl,
  kubectlOk,
  policyInForce,
  POLICY_DENIED,
  startSpecGuard,
  unregister,
  admissionObjectExists,
  expireLease,
  webhooksOnlyConfig,
  waitFor,
  type KubectlResult,
  type SpecGuard,
} from './harness.js';

// Layer 0: the ValidatingAdmissionPolicy spec-guard renders from its configuration holds the
// line inside the apiserver, with every spec-guard replica down, and refuses exactly what
// the webhook refuses.
jest.setTimeout(180_000);

const NS = 'argocd';
const REPO_LABEL = 'argocd.argoproj.io/secret-type';
const describeLocal = inCluster ? describe.skip : describe;

function repoSecret(name: string, labelled: boolean): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: NS, ...(labelled ? { labels: { [REPO_LABEL]: 'repository' } } : {}) },
    stringData: { url: `https://example.com/${name}.git` },
  });
}

/** ~25 KB of Helm values: a large, schemaless part of the real Application schema. */
const bigValues = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`key${i}`, { replicas: i, image: `registry.example.com/team/app-${i}:v1.2.3`, enabled: true }]));

const patchApp = (identity: string[], name: string, body: object) =>
  kubectl(identity, ['patch', 'application', '-n', NS, name, '--type=merge', '-p', JSON.stringify(body)]);

interface Write {
  what: string;
  refused: boolean;
  run: () => KubectlResult;
}

/** The same untrusted (and harmless) writes, run against each layer alone. */
const writes: Write[] = [
  { what: 'alice edits the spec', refused: true, run: () => patchApp(ALICE, 'pol-a', { spec: { source: { targetRevision: 'evil' } } }) },
  { what: 'alice turns auto-sync on with automated: {}', refused: true, run: () => patchApp(ALICE, 'pol-a', { spec: { syncPolicy: { automated: {} } } }) },
  { what: 'alice forges the stamp', refused: true, run: () => patchApp(ALICE, 'pol-a', { metadata: { annotations: { [STAMP_ANNOTATION]: 'v1.forged' } } }) },
  {
    what: 'alice removes the stamp',
    refused: true,
    run: () => kubectl(ALICE, ['patch', 'application', '-n', NS, 'pol-a', '--type=json', '-p', JSON.stringify([{ op: 'remove', path: '/metadata/annotations/spec-guard.io~1stamp' }])]),
  },
  { what: 'alice edits one value deep in a 25 KB spec', refused: true, run: () => patchApp(ALICE, 'pol-big', { spec: { source: { helm: { valuesObject: { key399: { replicas: 0 } } } } } }) },
  { what: 'alice takes a repository Secret out of the selection', refused: true, run: () => kubectl(ALICE, ['label', 'secret', '-n', NS, 'pol-repo', `${REPO_LABEL}-`]) },
  { what: 'alice moves a plain Secret into the selection', refused: true, run: () => kubectl(ALICE, ['label', 'secret', '-n', NS, 'pol-plain', `${REPO_LABEL}=repository`]) },
  { what: 'alice edits a repository Secret', refused: true, run: () => kubectl(ALICE, ['patch', 'secret', '-n', NS, 'pol-repo', '-p', '{"stringData":{"url":"https://evil.example/r.git"}}']) },
  { what: 'alice deletes an Application', refused: true, run: () => kubectl(ALICE, ['delete', 'application', '-n', NS, 'pol-a', '--wait=false']) },
  { what: 'alice creates an Application', refused: true, run: () => kubectl(ALICE, ['create', '-f', '-'], { input: application('pol-alice', NS) }) },
  { what: 'alice labels an Application', refused: false, run: () => kubectl(ALICE, ['label', '--overwrite', 'application', '-n', NS, 'pol-a', `team=t${Date.now()}`]) },
  { what: 'alice annotates an Application', refused: false, run: () => kubectl(ALICE, ['annotate', '--overwrite', 'application', '-n', NS, 'pol-a', `note=n${Date.now()}`]) },
  { what: 'alice edits a plain Secret', refused: false, run: () => kubectl(ALICE, ['patch', 'secret', '-n', NS, 'pol-plain', '-p', `{"stringData":{"n":"${Date.now()}"}}`]) },
  { what: 'the controller writes status', refused: false, run: () => patchApp(CONTROLLER, 'pol-a', { status: { sync: { status: 'Synced' }, reconciledAt: new Date().toISOString() } }) },
  { what: 'the controller sets .operation', refused: false, run: () => patchApp(CONTROLLER, 'pol-a', { operation: { sync: { revision: 'HEAD' } } }) },
];

/** Runs every write; returns, per write, whether it was refused and what was said. */
function runWrites(): Array<{ what: string; refused: boolean; stderr: string }> {
  return writes.map((w) => {
    const r = w.run();
    return { what: w.what, refused: r.code !== 0, stderr: r.stderr };
  });
}

const exists = admissionObjectExists;

describeLocal('layer 0: the admission policy inside the apiserver', () => {
  let sg: SpecGuard | undefined;

  beforeAll(async () => {
    unregister();
    expireLease();
    sg = await startSpecGuard(fixture('config.yaml'));
    await waitFor('the admission policy and binding', () => exists('validatingadmissionpolicy') && exists('validatingadmissionpolicybinding'), 10_000);
    // Written through spec-guard, so stamped (the stamp writes below need one to forge or remove).
    agentApply('pol-a', NS);
    agentApply('pol-big', NS, { source: { repoURL: 'https://example.com/charts.git', targetRevision: 'HEAD', path: 'chart', helm: { valuesObject: bigValues } } });
    kubectlOk(AGENT, ['apply', '--server-side', '--field-manager=argocd-agent', '-f', '-'], { input: repoSecret('pol-repo', true) });
    kubectlOk(ALICE, ['apply', '--server-side', '-f', '-'], { input: repoSecret('pol-plain', false) });
    expect(getJson(['application', '-n', NS, 'pol-a']).metadata.annotations[STAMP_ANNOTATION]).toMatch(/^v2\./);
  });

  afterAll(async () => {
    await sg?.stop();
    unregister();
    kubectl([], ['delete', 'application', '-n', NS, 'pol-a', 'pol-big', '--ignore-not-found', '--wait=false']);
    kubectl([], ['delete', 'secret', '-n', NS, 'pol-repo', 'pol-plain', '--ignore-not-found']);
  });

  it('1. is registered with the webhooks, which then fail open for untrusted writers; the tombstone webhook still fails closed', () => {
    const policy = getJson(['validatingadmissionpolicy', 'spec-guard']);
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.validations.length).toBeGreaterThan(0);
    const failurePolicies = (kind: string) =>
      Object.fromEntries((getJson([kind, 'spec-guard']).webhooks as Array<{ name: string; failurePolicy: string }>).map((w) => [w.name, w.failurePolicy]));
    expect(failurePolicies('mutatingwebhookconfiguration')).toEqual({ 'stamp.spec-guard.io': 'Ignore', 'guard.spec-guard.io': 'Ignore' });
    // The writers the policy leaves to the webhook (the application-controller) are checked fail-closed.
    expect(failurePolicies('validatingwebhookconfiguration')).toEqual({ 'guard.spec-guard.io': 'Ignore', 'normalized.spec-guard.io': 'Fail', 'tombstone.spec-guard.io': 'Fail' });
  });

  it('2. with every replica stopped, untrusted spec edits, stamp changes, selection escapes, creates and deletes are refused by the policy; the agent and the controller pass', async () => {
    await sg!.stop('SIGKILL');
    sg = undefined;
    // The apiserver loads a new policy within about a second of its creation: from then on
    // it holds with nobody serving.
    await policyInForce();
    const results = runWrites();
    for (const [i, r] of results.entries()) {
      expect({ what: r.what, refused: r.refused }).toEqual({ what: writes[i]!.what, refused: writes[i]!.refused });
      if (r.refused) expect(r.stderr).toContain(POLICY_DENIED);
    }
    const specEdit = results[0]!.stderr;
    expect(specEdit).toContain('/spec of Application argocd/pol-a is owned by the source of truth');
    expect(specEdit).toContain('source-of-truth cluster');
    expect(results[5]!.stderr).toContain('moves Secret argocd/pol-repo into or out of a guarded selection');
    expect(getJson(['application', '-n', NS, 'pol-a']).spec.source.targetRevision).toBe('HEAD');
    expect(getJson(['secret', '-n', NS, 'pol-repo']).metadata.labels[REPO_LABEL]).toBe('repository');
    // The source of truth is never blocked by the policy: the agent's update passes.
    const agent = patchApp(AGENT, 'pol-a', { spec: { source: { targetRevision: 'v2' } } });
    expect(agent.stderr).toBe('');
    expect(getJson(['application', '-n', NS, 'pol-a']).spec.source.targetRevision).toBe('v2');
  });

  it('3. the policy alone and the webhooks alone refuse the same untrusted writes and admit the same harmless ones', async () => {
    // Policy only: spec-guard is down and its webhook configurations are gone.
    kubectlOk([], ['delete', 'mutatingwebhookconfiguration,validatingwebhookconfiguration', 'spec-guard']);
    const policyOnly = runWrites().map(({ what, refused }) => ({ what, refused }));
    // Webhooks only: no policy, spec-guard serving with admissionPolicy: false.
    unregister();
    expireLease();
    sg = await startSpecGuard(webhooksOnlyConfig());
    await waitFor('the webhook configurations', () => exists('validatingwebhookconfiguration'), 10_000);
    expect(exists('validatingadmissionpolicy')).toBe(false);
    const results = runWrites();
    for (const r of results) if (r.refused) expect(r.stderr).not.toContain(POLICY_DENIED);
    const webhooksOnly = results.map(({ what, refused }) => ({ what, refused }));
    const expected = writes.map(({ what, refused }) => ({ what, refused }));
    expect(policyOnly).toEqual(expected);
    expect(webhooksOnly).toEqual(expected);
    await sg.stop();
    sg = undefined;
  });

  it('4. deleted or altered, the policy and the binding are restored within 5 s', async () => {
    unregister();
    sg = await startSpecGuard(fixture('config.yaml'));
    await waitFor('the admission policy and binding', () => exists('validatingadmissionpolicy') && exists('validatingadmissionpolicybinding'), 10_000);
    for (const kind of ['validatingadmissionpolicy', 'validatingadmissionpolicybinding']) {
      kubectlOk([], ['delete', kind, 'spec-guard']);
      const started = Date.now();
      await waitFor(`${kind} to be recreated`, () => exists(kind), 5000, 50);
      expect(Date.now() - started).toBeLessThan(5000);
    }
    kubectlOk([], ['patch', 'validatingadmissionpolicybinding', 'spec-guard', '--type=merge', '-p', '{"spec":{"validationActions":["Audit"]}}']);
    await waitFor('the binding to deny again', () => getJson(['validatingadmissionpolicybinding', 'spec-guard']).spec.validationActions.join() === 'Deny', 5000, 50);
    await sg.waitForLog(/admission object restored: it was deleted.*ValidatingAdmissionPolicy"/);
    await sg.waitForLog(/admission object restored: it was changed.*ValidatingAdmissionPolicyBinding/);
  });
});
