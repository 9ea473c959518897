import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { metricValue, parsePrometheusText } from '../helpers/prometheus.js';
import { ALICE, agentApply, expireLease, fixture, getJson, inCluster, installLayers, kubectl, kubectlOk, layerIntact, readApplication, startSpecGuard, unregister, waitFor, waitForRevision, type SpecGuard } from './harness.js';

// An admission object that still holds every field spec-guard renders can be switched off by
// what is added to it: a binding's matchResources, a webhook's objectSelector. Such an edit is
// a blind window like a delete: healed when spec-guard registers, reported and never taken as
// continuity when it does not (GitOps).
jest.setTimeout(120_000);

const NS = 'argocd';
const NEVER = { matchLabels: { 'spec-guard.io/never': 'matches' } };
const running: SpecGuard[] = [];

afterAll(async () => {
  await Promise.all(running.map((sg) => sg.stop()));
  unregister();
  kubectl([], ['delete', 'application', '-n', NS, 'edited-a', '--ignore-not-found', '--wait=false']);
});

/** spec-guard as a GitOps install runs it: leading, registering nothing itself. */
async function startUnregistered(config: string): Promise<SpecGuard> {
  unregister();
  expireLease();
  const sg = await startSpecGuard(config, ['--no-register']);
  running.push(sg);
  await sg.waitForLog(/became the leader/);
  return sg;
}

const guardIntact = async (sg: SpecGuard) => metricValue(parsePrometheusText(await sg.metrics()), 'spec_guard_admission_layer_intact', { layer: 'guard' });

(inCluster ? describe.skip : describe)('edits that add to the admission objects', () => {
  it('1. a never-matching selector added to the policy binding or the guard webhook is a blind window, and is healed', async () => {
    unregister();
    expireLease();
    const sg = await startSpecGuard(fixture('config.yaml'));
    running.push(sg);
    await layerIntact(sg, 'guard');
    kubectlOk([], ['patch', 'validatingadmissionpolicybinding', 'spec-guard', '--type=merge', '-p', JSON.stringify({ spec: { matchResources: { objectSelector: NEVER } } })]);
    await sg.waitForLog(/admission object restored: it was changed.*ValidatingAdmissionPolicyBinding/);
    await sg.waitForLog(/blind window begins.*ValidatingAdmissionPolicyBinding/);
    await waitFor('the binding as rendered again', () => !getJson(['validatingadmissionpolicybinding', 'spec-guard']).spec.matchResources?.objectSelector?.matchLabels, 5000, 100);
    kubectlOk([], ['patch', 'validatingwebhookconfiguration', 'spec-guard', '--type=json', '-p', JSON.stringify([{ op: 'add', path: '/webhooks/0/objectSelector', value: NEVER }])]);
    await sg.waitForLog(/admission object restored: it was changed.*ValidatingWebhookConfiguration/);
    await waitFor('the webhook as rendered again', () => !getJson(['validatingwebhookconfiguration', 'spec-guard']).webhooks[0].objectSelector?.matchLabels, 5000, 100);
    await sg.stop();
    running.splice(0);
  });

  it('2. registered the GitOps way, an added selector is no continuity: the layer reads broken, and a change made through it is reverted, not learned', async () => {
    const config = fixture('config.yaml');
    const sg = await startUnregistered(config);
    installLayers(config, sg);
    await layerIntact(sg, 'guard');
    agentApply('edited-a', NS);
    await waitFor('stamped', async () => (await readApplication(NS, 'edited-a'))?.metadata?.annotations?.['spec-guard.io/stamp']);
    // Every layer that would refuse alice is switched off by a selector that matches nothing.
    kubectlOk([], ['patch', 'validatingadmissionpolicybinding', 'spec-guard', '--type=merge', '-p', JSON.stringify({ spec: { matchResources: { objectSelector: NEVER } } })]);
    for (const kind of ['validatingwebhookconfiguration', 'mutatingwebhookconfiguration']) {
      const webhooks = getJson([kind, 'spec-guard']).webhooks as unknown[];
      kubectlOk([], ['patch', kind, 'spec-guard', '--type=json', '-p', JSON.stringify(webhooks.map((_, i) => ({ op: 'add', path: `/webhooks/${i}/objectSelector`, value: NEVER })))]);
    }
    await waitFor('the guard layer reported broken', async () => (await guardIntact(sg)) === 0, 15_000, 250);
    // The apiserver drops the old policy binding at its next refresh.
    await new Promise((r) => setTimeout(r, 2000));
    kubectlOk(ALICE, ['patch', 'application', '-n', NS, 'edited-a', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"mallory"}}}']);
    expect(await waitForRevision(NS, 'edited-a', 'HEAD', 10_000)).toBeLessThan(10_000);
    await sg.waitForLog(/drift reverted.*edited-a/, 5000);
    await sg.stop();
    running.splice(0);
  });

  it('3. registered for another identity than the one spec-guard runs as: said loudly, and never taken as a layer in force', async () => {
    const config = fixture('config.yaml');
    const sg = await startUnregistered(config);
    installLayers(config, sg, undefined, 'system:serviceaccount:elsewhere:spec-guard');
    await sg.waitForLog(/does not trust this replica.*ValidatingAdmissionPolicy/, 15_000);
    const untrusted = async (kind: string) => metricValue(parsePrometheusText(await sg.metrics()), 'spec_guard_self_untrusted', { kind });
    for (const kind of ['ValidatingAdmissionPolicy', 'MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      await waitFor(`${kind} reported as not trusting spec-guard`, async () => (await untrusted(kind)) === 1, 10_000, 250);
    }
    await new Promise((r) => setTimeout(r, 4000));
    expect(await guardIntact(sg)).toBe(0);
  });
});
