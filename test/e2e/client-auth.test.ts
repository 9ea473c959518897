import { spawnSync } from 'node:child_process';
import https from 'node:https';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { agentApply, fixture, inCluster, kubectlOk, readApplication, startSpecGuard, state, unregister, waitFor, type SpecGuard } from './harness.js';

// The shipped installs hear only the apiserver: its front-proxy client certificate, checked
// against the CA and names it publishes in kube-system/extension-apiserver-authentication.
// A pod that reaches the port gets 401 for any review, so it cannot have a spec stamped.
const root = new URL('../../', import.meta.url).pathname;
const describeLocal = inCluster ? describe.skip : describe;
const pki = () => join(dirname(state().adminKubeconfig), 'pki');

/** A review claiming the agent's create: what /mutate would stamp for anyone it answered. */
const claimedCreate = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'claimed-1',
    kind: { group: 'argoproj.io', version: 'v1alpha1', kind: 'Application' },
    resource: { group: 'argoproj.io', version: 'v1alpha1', resource: 'applications' },
    name: 'claimed',
    namespace: 'argocd',
    operation: 'CREATE',
    userInfo: { username: 'system:serviceaccount:argocd:argocd-agent-agent', groups: ['system:authenticated'] },
    object: { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'claimed', namespace: 'argocd' }, spec: { project: 'evil' } },
  },
});

/** POSTs the claimed review to /mutate, with the named client certificate of the local CA or none. */
function post(port: number, certificate?: string): Promise<{ status: number; body: string }> {
  const client = certificate ? { cert: readFileSync(join(pki(), `${certificate}.crt`)), key: readFileSync(join(pki(), `${certificate}.key`)) } : {};
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path: '/mutate', method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' }, ...client }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(claimedCreate);
  });
}

/** The spec-guard container's arguments, as an install renders them. */
function shippedArgs(yamlText: string): string[] {
  const deployment = parseAllDocuments(yamlText).map((d) => d.toJS()).find((d) => d?.kind === 'Deployment');
  return deployment.spec.template.spec.containers[0].args as string[];
}

describe('the shipped installs verify the apiserver’s client certificate', () => {
  it('the overlays and the chart (by default) run --client-ca-from-cluster with the RBAC to read the published CA; the chart’s none and the unauthenticated-reviews component drop it', () => {
    for (const overlay of ['managed-agent', 'principal-autonomous']) {
      const rendered = kubectlOk([], ['kustomize', `${root}manifests/overlays/${overlay}`]);
      expect(shippedArgs(rendered)).toContain('--client-ca-from-cluster');
      expect(rendered).toContain('name: extension-apiserver-authentication-reader');
    }
    const helm = (values: string[]) => spawnSync(process.env.SPEC_GUARD_HELM!, ['template', 'spec-guard', `${root}charts/spec-guard`, '-n', 'spec-guard', ...values], { encoding: 'utf8' }).stdout;
    expect(shippedArgs(helm([]))).toContain('--client-ca-from-cluster');
    expect(helm([])).toContain('name: extension-apiserver-authentication-reader');
    expect(shippedArgs(helm(['--set', 'clientAuthentication=none']))).not.toContain('--client-ca-from-cluster');
    const dir = `${root}.cache/kustomize/unauthenticated`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/kustomization.yaml`, 'resources: [../../../manifests/overlays/managed-agent]\ncomponents: [../../../manifests/components/unauthenticated-reviews]\n');
    expect(shippedArgs(kubectlOk([], ['kustomize', dir]))).not.toContain('--client-ca-from-cluster');
  });
});

describeLocal('--client-ca-from-cluster against the real apiserver', () => {
  let sg: SpecGuard;
  beforeAll(async () => {
    sg = await startSpecGuard(fixture('config.yaml'), ['--client-ca-from-cluster']);
    await sg.waitForLog(/became the leader/);
  }, 60_000);
  afterAll(async () => {
    await sg.stop();
    unregister();
  });

  it('a review without a client certificate gets 401, and nothing is stamped for it', async () => {
    const answer = await post(sg.webhookPort);
    expect(answer.status).toBe(401);
    expect(answer.body).toMatch(/accepted from the apiserver only/);
    expect(answer.body).not.toContain('patch');
  });

  it('a certificate the same CA signed for another name (an admin’s) gets 401: only the names the apiserver publishes are heard', async () => {
    expect((await post(sg.webhookPort, 'admin')).status).toBe(401);
  });

  it('the apiserver’s front-proxy certificate is heard, and the apiserver’s own calls stamp the agent’s writes', async () => {
    const answer = await post(sg.webhookPort, 'front-proxy-client');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).response.allowed).toBe(true);
    agentApply('client-auth-stamped', 'argocd');
    await waitFor('stamped through the apiserver', async () => (await readApplication('argocd', 'client-auth-stamped'))?.metadata?.annotations?.['spec-guard.io/stamp']);
    expect(sg.logs()).not.toMatch(/reviews are not authenticated/);
  });
});
